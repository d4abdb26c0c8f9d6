"""What deploy/ ships: Kubernetes manifests valid for the API server, flags and variables the commands know,
NATS configs the real server accepts, services that run with the least privilege they need (systemd units and
pods, judged by systemd-analyze and the kernel's W^X switch), and a Grafana dashboard whose every panel runs on
the embedded store."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import typer.main
import yaml

from gpuctl.main import app
from gpuhealth.natsd import find_binary
from sinks.clickhouse import Store
from sinks.generate import expected, generate
from sinks.report import week_bounds
from tests.conftest import REPO, need

DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
MANIFESTS = sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
SOURCES = [
    p for d in ("gpuctl", "gpuhealth", "producers", "responder", "rules", "sinks") for p in (REPO / d).rglob("*.py")
]


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_kubernetes_manifests_are_valid_for_the_api_server(path: Path) -> None:
    for doc in documents(path):
        kubernetes_validate.validate(doc, "1.30.0", strict=True)  # raises, naming the field


def test_the_validator_refuses_a_misspelt_field() -> None:
    doc = documents(K8S / "agent.yaml")[0]
    doc["spec"]["template"]["spec"]["containers"][0]["volumeMount"] = []
    with pytest.raises(kubernetes_validate.ValidationError, match="volumeMount"):
        kubernetes_validate.validate(doc, "1.30.0", strict=True)


def test_the_agents_probe_speaks_the_apis_scheme() -> None:
    """The agent serves HTTPS unless told --api-tls off: a plain-HTTP probe would keep every pod unready."""
    [container] = documents(K8S / "agent.yaml")[0]["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    tls_off = "--api-tls" in args and args[args.index("--api-tls") + 1] == "off"
    assert container["readinessProbe"]["httpGet"].get("scheme", "HTTP") == ("HTTP" if tls_off else "HTTPS")


def test_the_kustomization_names_files_that_exist_or_that_nats_config_writes() -> None:
    k = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert {r for r in k["resources"]} == {p.name for p in MANIFESTS}
    generated = re.compile(
        r"^(nats/(nats-\d\.conf|auth\.conf|fleet\.env|secrets/(rules|sink)\.password)|clickhouse\.password)$"
    )
    for gen in k["configMapGenerator"] + k["secretGenerator"]:
        for entry in gen.get("files", []) + gen.get("envs", []):
            path = entry.split("=", 1)[-1]
            assert (K8S / path).is_file() or generated.match(path), path


def containers() -> list[tuple[str, dict[str, Any]]]:
    """(where, container) of every gpuhealth container in the manifests and the compose file."""
    out = []
    for path in MANIFESTS:
        for doc in documents(path):
            for c in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                if c.get("command") == ["gpuctl"]:
                    out.append((f"{path.name}:{c['name']}", c))
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    for name, svc in compose["services"].items():
        if svc.get("image") == "gpuhealth:local":
            env = [{"name": k, "value": v} for k, v in svc.get("environment", {}).items()]
            out.append((f"compose.yaml:{name}", {"args": svc["command"], "env": env}))
    return out


def command_options(words: list[str]) -> tuple[str, set[str]]:
    """The gpuctl (sub)command the words name, and every option string it takes."""
    cmd: Any = typer.main.get_command(app)  # typer's own click: a group is what has commands
    path = []
    for w in words:
        if w not in getattr(cmd, "commands", {}):
            break
        cmd, path = cmd.commands[w], [*path, w]
    return " ".join(path), {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}


def test_every_flag_and_variable_the_deployments_use_exists() -> None:
    found = containers()
    assert {w.split(":")[1] for w, _ in found} >= {"agent", "rules", "sink"}
    code = "\n".join(p.read_text() for p in SOURCES)
    for where, c in found:
        args = [str(a) for a in c["args"]]
        name, options = command_options(args)
        assert name.startswith("serve "), where
        flags = {a for a in args if a.startswith("--")}
        assert flags <= options, f"{where}: {sorted(flags - options)} not in `gpuctl {name} --help`"
        for var in (e["name"] for e in c.get("env", []) if e["name"].startswith("GPUHEALTH_")):
            assert var in code, f"{where}: nothing reads {var}"


def test_nats_config_writes_configs_the_server_accepts(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    out = tmp_path / "nats"
    r = CliRunner().invoke(app, ["nats-config", "--out", str(out), "--node", "gpu-001", "--node", "gpu.002"])
    assert r.exit_code == 0, r.output
    for i in (1, 2, 3):
        check = subprocess.run([find_binary(), "-t", "-c", str(out / f"nats-{i}.conf")], capture_output=True,
                               text=True)  # fmt: skip
        assert check.returncode == 0, check.stderr
    secrets = {p.name: p for p in (out / "secrets").iterdir()}
    assert set(secrets) == {"rules.password", "sink.password", "responder.password", "operator.password", "reader.password",
                            "system.password",
                            "agent-gpu-001.password", "agent-gpu_002.password"}  # fmt: skip
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in secrets.values())
    auth = (out / "auth.conf").read_text()
    assert all(p.read_text().strip() not in auth for p in secrets.values())  # hashes only
    before = secrets["agent-gpu-001.password"].read_text()
    r = CliRunner().invoke(app, ["nats-config", "--out", str(out), "--node", "gpu-001", "--node", "gpu-003"])
    assert r.exit_code == 0 and secrets["agent-gpu-001.password"].read_text() == before  # kept on a re-run
    assert '"user": "agent-gpu-003"' in (out / "auth.conf").read_text()
    assert CliRunner().invoke(app, ["nats-config", "--out", str(out)]).exit_code != 0  # no nodes: refused


# ---------------------------------------------------------------- least privilege (DESIGN.md, principle 6)

SYSTEMD = DEPLOY / "systemd"
GPUCTL = str(Path(sys.executable).parent / "gpuctl")


def unit_settings(name: str) -> dict[str, list[str]]:
    """A unit's [Service] settings, every value of a repeated key in order ("" where the line empties it)."""
    out: dict[str, list[str]] = {}
    section = ""
    for line in (SYSTEMD / name).read_text().splitlines():
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out.setdefault(key, []).append(value)
    return out


def judge(tool: str) -> None:
    """A real judge missing here: a skip on a workstation, a failure in CI."""
    need(shutil.which(tool) is not None, f"{tool} (deploy/test-deps.sh installs it)")


@pytest.mark.parametrize("service", ["rules", "sink"])
def test_the_rules_and_the_sink_units_run_with_no_privilege(service: str) -> None:
    s = unit_settings(f"gpuhealth-{service}.service")
    # a user of its own, made at start (not shared: one service cannot read the other's credentials)
    assert (s["DynamicUser"], s["User"], s["Group"]) == (["yes"], [f"gpuhealth-{service}"], [f"gpuhealth-{service}"])
    assert s["CapabilityBoundingSet"] == [""] and s["AmbientCapabilities"] == [""]
    expected = {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
                "PrivateDevices": "yes", "PrivateUsers": "yes", "PrivateMounts": "yes", "ProtectProc": "invisible",
                "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes", "ProtectKernelLogs": "yes",
                "ProtectControlGroups": "yes", "ProtectClock": "yes", "ProtectHostname": "yes",
                "RestrictNamespaces": "yes", "RestrictRealtime": "yes", "RestrictSUIDSGID": "yes",
                "LockPersonality": "yes", "MemoryDenyWriteExecute": "yes", "RemoveIPC": "yes", "UMask": "0077",
                "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "SystemCallArchitectures": "native",
                "SystemCallErrorNumber": "EPERM"}  # fmt: skip
    assert {k: s.get(k) for k in expected} == {k: [v] for k, v in expected.items()}
    assert s["SystemCallFilter"] == ["@system-service", "~@privileged @resources"]
    # nothing to write, no device, no group to borrow
    assert not {"ReadWritePaths", "StateDirectory", "DeviceAllow", "SupplementaryGroups"} & s.keys()


def service_environment(name: str, credentials: Path) -> dict[str, str]:
    """What systemd hands the unit's command on a machine whose /etc/default/gpuhealth sets every variable it shows,
    the agent's identity included, and a NATS password, token and ClickHouse password besides: the file's
    assignments (EnvironmentFile= wins over Environment=), less UnsetEnvironment=, plus what the command line's
    `env` sets, with %d the credentials directory."""
    default = (SYSTEMD / "gpuhealth.default").read_text()
    env = dict(re.findall(r"^#? ?(GPUHEALTH_\w+)=(\S+)$", default, re.M))
    env |= {"GPUHEALTH_NATS_PASSWORD": "the agent's", "GPUHEALTH_NATS_TOKEN": "a token",
            "GPUHEALTH_CLICKHOUSE_PASSWORD": "in the file"}  # fmt: skip
    assert env["GPUHEALTH_NATS_USER"].startswith("agent-") and "GPUHEALTH_NATS_CREDS" in env
    s = unit_settings(name)
    for var in " ".join(s.get("UnsetEnvironment", [])).split():
        env.pop(var, None)
    [line] = s["ExecStart"]
    argv = line.replace("%d", str(credentials)).split()
    assert argv[0] == "/usr/bin/env"
    env |= dict(a.split("=", 1) for a in itertools.takewhile(lambda a: "=" in a, argv[1:]))
    return {k: v for k, v in env.items() if not k.startswith("GPUHEALTH_NATS_TLS_")}  # the machine's CA: shared


@pytest.mark.parametrize(("service", "sources"), [
    ("rules", {"nats-password": "/etc/gpuhealth/rules.password"}),
    ("sink", {"nats-password": "/etc/gpuhealth/sink.password", "clickhouse-password": "/etc/gpuhealth/clickhouse.password"}),
])  # fmt: skip
def test_the_services_connect_as_themselves_with_the_passwords_systemd_hands_them(
    service: str, sources: dict[str, str], tmp_path: Path
) -> None:
    from gpuhealth import bus
    from sinks import target

    name = f"gpuhealth-{service}.service"
    loaded = dict(c.split(":", 1) for c in unit_settings(name)["LoadCredential"])
    assert loaded == sources  # the 0600 root files, read by systemd, not by the service's own user
    for credential in loaded:
        (tmp_path / credential).write_text(f"{service}'s {credential}\n")
    env = service_environment(name, tmp_path)
    opts = bus.auth_options(env)
    assert opts == {"user": service, "password": f"{service}'s nats-password"}  # no agent's creds, no token
    if service == "sink":
        [line] = unit_settings(name)["ExecStart"]
        flag = re.search(r"--clickhouse-password-file (\S+)", line)
        assert flag is not None and flag[1] == "%d/clickhouse-password"
        t = target.parse(env["GPUHEALTH_CLICKHOUSE_URL"], env=env, password_file=tmp_path / "clickhouse-password")
        assert (t.username, t.password) == ("gpuhealth", "sink's clickhouse-password")


@pytest.mark.parametrize("name", ["gpuhealth-agent.service", "gpuhealth.service"])
def test_the_agent_keeps_cap_syslog_alone_and_says_why_it_is_root(name: str) -> None:
    s = unit_settings(name)
    assert not {"User", "DynamicUser", "AmbientCapabilities"} & s.keys()  # UID 0, on purpose:
    assert "runs as root" in (SYSTEMD / name).read_text().split("[Unit]")[0]  # the header says why
    assert s["CapabilityBoundingSet"] == ["CAP_SYSLOG"]  # /dev/kmsg under dmesg_restrict
    assert (s["NoNewPrivileges"], s["ProtectSystem"], s["ProtectHome"], s["RestrictNamespaces"]) == (
        ["yes"], ["strict"], ["yes"], ["yes"])  # fmt: skip
    assert s["DevicePolicy"] == ["closed"]
    assert s["DeviceAllow"] == ["/dev/kmsg r", "/dev/nvidiactl rw", "char-nvidia-frontend rw", "char-nvidia-uvm rw"]
    assert s["ReadWritePaths"] == ["/var/lib/gpuhealth"]


# Bounds on `systemd-analyze security` (0 best, 10 worst), measured when these units were written; before,
# rules and sink scored 4.3, the agent 5.2 and gpuhealth.service 5.7.
EXPOSURE = {"gpuhealth-rules.service": 1.1, "gpuhealth-sink.service": 1.1, "gpuhealth-agent.service": 2.7,
            "gpuhealth.service": 4.5}  # fmt: skip


def exposure(unit: Path) -> float:
    r = subprocess.run(["systemd-analyze", "security", "--offline=true", "--no-pager", str(unit)],
                       capture_output=True, text=True)  # fmt: skip
    found = re.search(rf"Overall exposure level for {re.escape(unit.name)}: (\d+\.\d)", r.stdout)
    assert found, r.stdout + r.stderr
    return float(found[1])


@pytest.mark.parametrize("name", sorted(EXPOSURE))
def test_systemd_analyze_security_scores_each_unit_within_its_bound(name: str, tmp_path: Path) -> None:
    judge("systemd-analyze")
    assert exposure(SYSTEMD / name) <= EXPOSURE[name]
    if name == "gpuhealth-rules.service":  # the judge sees the difference: root with every capability scores worse
        text = (SYSTEMD / name).read_text()
        loose = re.sub(r"^(DynamicUser|User|Group|CapabilityBoundingSet|PrivateUsers)=.*\n", "", text, flags=re.M)
        (tmp_path / name).write_text(loose)
        assert exposure(tmp_path / name) > EXPOSURE[name] + 1


# MemoryDenyWriteExecute=yes, by the kernel's own switch: PR_SET_MDWE (65) with PR_MDWE_REFUSE_EXEC_GAIN (1),
# Linux 6.3, kept across exec. A mapping may be writable or executable, never both, nor made executable later;
# systemd's seccomp filter refuses the same mmap calls and any mprotect to executable.
WITHOUT_WX_MEMORY = (
    "import ctypes, os, sys\n"
    "if ctypes.CDLL(None, use_errno=True).prctl(65, 1, 0, 0, 0):\n"
    "    sys.exit(f'PR_SET_MDWE: {os.strerror(ctypes.get_errno())}')\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n"
)


def without_wx_memory(argv: list[str]) -> list[str]:
    return [sys.executable, "-c", WITHOUT_WX_MEMORY, *argv]


def wx_memory_is_refused() -> bool:
    r = subprocess.run(without_wx_memory([sys.executable, "-c", "import mmap; mmap.mmap(-1, 4096, prot=7)"]),
                       capture_output=True, text=True)  # fmt: skip
    return r.returncode != 0 and "PermissionError" in r.stderr  # (not "PR_SET_MDWE: Invalid argument")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("service", ["rules", "sink"])
async def test_the_services_run_with_no_writable_executable_memory(service: str, nats_url: str,
                                                                   tmp_path: Path) -> None:  # fmt: skip
    need(await asyncio.to_thread(wx_memory_is_refused), "the kernel's PR_SET_MDWE (Linux 6.3), to test W^X")
    clickhouse = f"http://127.0.0.1:{closed_port()}/gpuhealth"
    args = {"rules": ["serve", "rules", "--nats", nats_url], "sink": ["serve", "sink", "--nats", nats_url,
                                                                     "--clickhouse", clickhouse]}  # fmt: skip
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
        notify.bind(str(tmp_path / "notify"))
        notify.settimeout(30)
        env = os.environ | {"NOTIFY_SOCKET": str(tmp_path / "notify"), "WATCHDOG_USEC": "400000"}
        proc = subprocess.Popen(without_wx_memory([GPUCTL, *args[service]]), env=env, stderr=subprocess.PIPE,  # noqa: ASYNC220
                                text=True)  # fmt: skip
        try:
            got = [(await asyncio.to_thread(notify.recv, 4096)).decode() for _ in range(3)]
            assert got[0].startswith("READY=1") and got[1:] == ["WATCHDOG=1", "WATCHDOG=1"], got
            if service == "sink":  # after READY it loads clickhouse-connect and tries the server: refused, not a crash
                assert proc.stderr is not None
                line = ""
                while "not reachable yet" not in line:
                    line = await asyncio.wait_for(asyncio.to_thread(proc.stderr.readline), 30)
                    assert line, "the sink ended"
            assert proc.poll() is None
        finally:
            proc.terminate()
            await asyncio.to_thread(proc.communicate, timeout=30)
    assert proc.returncode == 0  # and it drains and stops cleanly


# ---------------------------------------------------------------- least privilege on Kubernetes


def pod_template(name: str) -> dict[str, Any]:
    [doc] = [d for d in documents(K8S / f"{name}.yaml") if d["kind"] in ("Deployment", "DaemonSet")]
    spec: dict[str, Any] = doc["spec"]["template"]["spec"]
    return spec


RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}  # fmt: skip


def restricted_violations(pod: dict[str, Any]) -> set[str]:
    """What the restricted Pod Security Standard (Kubernetes 1.30, baseline's rules included) refuses in a pod."""
    out = set()
    if any(pod.get(k) for k in ("hostNetwork", "hostPID", "hostIPC")):
        out.add("host namespaces")
    kinds = {kind for v in pod.get("volumes", []) for kind in v if kind != "name"}
    out |= {f"{kind} volume" for kind in kinds - RESTRICTED_VOLUMES}
    psc = pod.get("securityContext", {})
    for c in pod["containers"] + pod.get("initContainers", []):
        sc = c.get("securityContext", {})
        caps = sc.get("capabilities", {})
        out |= {f"capability {a}" for a in caps.get("add", []) if a != "NET_BIND_SERVICE"}
        out |= {"privileged"} if sc.get("privileged") else set()
        out |= {"hostPort"} if any(p.get("hostPort") for p in c.get("ports", [])) else set()
        out |= set() if "ALL" in caps.get("drop", []) else {"capabilities not dropped"}
        out |= set() if sc.get("allowPrivilegeEscalation") is False else {"allowPrivilegeEscalation"}
        out |= set() if sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True else {"runAsNonRoot"}
        out |= {"runAsUser 0"} if sc.get("runAsUser", psc.get("runAsUser")) == 0 else set()
        seccomp = sc.get("seccompProfile", psc.get("seccompProfile", {})).get("type")
        out |= set() if seccomp in ("RuntimeDefault", "Localhost") else {"seccompProfile"}
    return out


@pytest.mark.parametrize(("service", "keys"), [("rules", {"rules.password"}),
                                               ("sink", {"sink.password", "clickhouse.password"})])  # fmt: skip
def test_the_rules_and_the_sink_pods_have_no_privilege_and_read_only_their_own_passwords(
    service: str, keys: set[str]
) -> None:
    pod = pod_template(service)
    assert restricted_violations(pod) == set()
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
                                      "fsGroup": 10001, "seccompProfile": {"type": "RuntimeDefault"}}  # fmt: skip
    assert pod["automountServiceAccountToken"] is False
    [c] = pod["containers"]
    assert c["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]}}  # fmt: skip
    # every password file it is told to read is in a Secret it mounts, readable by its group (fsGroup) alone
    volumes = {v["name"]: v for v in pod["volumes"]}
    files: dict[str, int] = {}
    for m in c["volumeMounts"]:
        if secret := volumes[m["name"]].get("secret"):
            assert secret["secretName"] == "gpuhealth-services"
            assert {i["key"] for i in secret["items"]} == keys  # not the other service's
            files |= {f"{m['mountPath']}/{i['path']}": i.get("mode", secret["defaultMode"]) for i in secret["items"]}
    args = [str(a) for a in c["args"]]
    told = [e["value"] for e in c["env"] if e["name"] == "GPUHEALTH_NATS_PASSWORD_FILE"]
    told += [args[i + 1] for i, a in enumerate(args) if a == "--clickhouse-password-file"]
    assert len(told) == len(keys) and set(told) == set(files)
    assert all(mode == 0o440 for mode in files.values())


def test_the_agent_keeps_syslog_alone_and_its_namespace_admits_it() -> None:
    pod = pod_template("agent")
    # exactly what it needs beyond restricted: the host's paths, SYSLOG for /dev/kmsg, and root for the node's files
    assert restricted_violations(pod) == {"hostPath volume", "capability SYSLOG", "runAsNonRoot", "runAsUser 0"}
    [c] = pod["containers"]
    sc = c["securityContext"]
    assert sc["capabilities"] == {"add": ["SYSLOG"], "drop": ["ALL"]}
    assert (sc["privileged"], sc["allowPrivilegeEscalation"], sc["readOnlyRootFilesystem"]) == (False, False, True)
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    writable = [m["mountPath"] for m in c["volumeMounts"] if not m.get("readOnly")]
    assert writable == ["/var/lib/gpuhealth"]
    [namespace] = documents(K8S / "namespace.yaml")
    labels = namespace["metadata"]["labels"]
    # it shares the namespace with the services: only privileged admits host paths, restricted is audited
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    assert labels["pod-security.kubernetes.io/audit"] == "restricted"


# ---------------------------------------------------------------- Grafana

WEEK = "2026-W40"


def expand(sql: str, start: dt.datetime, end: dt.datetime, database: str) -> str:
    """The macros of Grafana's ClickHouse data source, as it expands them, over our test database."""
    sql = sql.replace("$__fromTime", f"toDateTime({int(start.timestamp())})")
    sql = sql.replace("$__toTime", f"toDateTime({int(end.timestamp())})").replace("$__interval_s", "3600")
    assert "$" not in sql.replace("$KV", ""), sql
    return sql.replace("gpuhealth.", f"{database}.")


def test_every_grafana_panel_runs_on_the_embedded_store_and_shows_the_generated_week(store: Store) -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "gpuhealth-fleet.json").read_text())
    generate(store, WEEK)
    truth = expected(WEEK)
    start, end, _ = week_bounds(WEEK)
    results: dict[str, list[dict[str, Any]]] = {}
    for panel in dashboard["panels"]:
        [target] = panel["targets"]
        assert target["datasource"]["type"] == "grafana-clickhouse-datasource"
        r = store.client.query(expand(target["rawSql"], start, end, store.database))
        results[panel["title"]] = [dict(zip(r.column_names, row, strict=True)) for row in r.result_rows]

    top = [(r["node"], r["serious"], r["incidents"]) for r in results["Top nodes"]]
    assert top == truth["top_nodes"]
    followed = [(r["serial"], r["nodes"].split(" -> ")) for r in results["GPUs whose faults follow their serial"]]
    assert followed == truth["followed_serial"]
    by_code = {(r["code"], r["gpu_model"]): (r["incidents"], r["occurrences"], r["nodes"])
               for r in results["Incidents by code and GPU model"]}  # fmt: skip
    assert by_code == {k: (n, o, nodes) for k, (n, o, _, nodes) in truth["incidents_by_code"].items()}
    # Over time: node-steps in each health add up to the report's availability (hourly steps, ±1 at the edges).
    steps = results["Nodes not Healthy"]
    for column, key in (("Unhealthy", "unhealthy_s"), ("Degraded", "degraded_s"), ("Unknown", "unknown_s")):
        hours = sum(a[key] for a in truth["availability"].values()) / 3600
        assert abs(sum(s[column] for s in steps) - hours) <= 1, column


# ---------------------------------------------------------------- ClickHouse reader

READER_SQL = DEPLOY / "clickhouse" / "reader.sql"


def reader_statements() -> list[str]:
    body = "\n".join(line for line in READER_SQL.read_text().splitlines() if not line.startswith("--"))
    return [" ".join(s.split()) for s in body.split(";") if s.strip()]


def test_the_reader_sql_parses_in_clickhouse_and_grants_select_on_gpuhealth_only(store: Store) -> None:
    statements = reader_statements()
    for stmt in statements:  # ClickHouse's own parser, with a password in the placeholder's place
        store.client.query("EXPLAIN AST " + stmt.replace("@READER_PASSWORD@", "'secret'"))
    [user] = [s for s in statements if s.startswith("CREATE USER")]
    with pytest.raises(Exception, match="Syntax error"):  # as shipped, it cannot create a user with a known password
        store.client.query("EXPLAIN AST " + user)
    assert user.endswith("SETTINGS PROFILE 'gpuhealth_reader'")
    assert [s for s in statements if s.startswith("GRANT")] == [
        "GRANT ON CLUSTER gpuhealth SELECT ON gpuhealth.* TO gpuhealth_reader"
    ]
    assert all(s.startswith(("CREATE SETTINGS PROFILE", "CREATE USER", "GRANT")) for s in statements)


def test_the_reader_profile_has_the_limits_the_sink_enforces() -> None:
    from sinks.reads import LIMITS, session_settings

    [profile] = [s for s in reader_statements() if s.startswith("CREATE SETTINGS PROFILE")]
    setting = re.compile(
        r"(?P<name>\w+) = (?P<value>'?\w+'?)(?: MIN (?P<min>\d+))?(?: MAX (?P<max>\d+))?(?P<const> CONST)?"
    )
    found = {
        m["name"]: (m["value"].strip("'"), m["min"], m["max"], bool(m["const"]))
        for m in setting.finditer(profile.rsplit(" SETTINGS ", 1)[1])
    }
    assert found.pop("readonly") == ("2", None, None, False)
    wanted = session_settings(LIMITS, 10**12, 10**6, in_process=False)  # the caps, as the sink sets them
    assert set(found) == set(wanted)
    for name, value in wanted.items():
        if isinstance(value, str) or name == "allow_introspection_functions":
            assert found[name] == (str(value), None, None, True), name  # fixed
        else:
            assert found[name] == (str(value), "1", str(value), False), name  # 0 would mean unlimited


def test_nats_config_sizes_the_streams_and_each_servers_store_for_its_nodes(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    nodes = tmp_path / "nodes"
    nodes.write_text("".join(f"gpu-{i:03d}\n" for i in range(200)))
    out = tmp_path / "nats"
    r = CliRunner().invoke(app, ["nats-config", "--out", str(out), "--nodes-file", str(nodes), "--fleet-gpus", "8"])
    assert r.exit_code == 0, r.output
    env = (out / "fleet.env").read_text().splitlines()[1:]
    assert env == [
        "GPUHEALTH_FLEET_NODES=200",
        "GPUHEALTH_FLEET_GPUS=8",
        "GPUHEALTH_FLEET_POLL_INTERVAL=10",
        "GPUHEALTH_METRICS_BUFFER_HOURS=6",
    ]
    # Streams: metrics 1,500 B x 8 GPUs x 8,640 polls x 200 nodes x 1/4 day x 1.25 = 6,480,000,000; events
    # and health 112,000,000; incidents 84,000,000; inventory, dead letters and decisions at the 64 MiB floor.
    # Buckets: 52,428,800 + 209,715,200 + the 16 MiB floor. All of it x 1.25.
    assert "max_file_store: 9085309760 }" in (out / "nats-1.conf").read_text()
    check = subprocess.run([find_binary(), "-t", "-c", str(out / "nats-1.conf")], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_the_rules_and_the_sink_size_the_streams_for_the_fleet_nats_config_wrote() -> None:
    # The finding: the servers' stores were sized for the fleet (nats-config), but the rules and sink pods and
    # compose services were not told its size, so they created every stream with one node's bounds (64 MiB).
    k = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    (fleet,) = [g for g in k["configMapGenerator"] if g["name"] == "gpuhealth-fleet"]
    assert fleet["envs"] == ["nats/fleet.env"]  # where `gpuctl nats-config --out deploy/k8s/nats` writes it
    for name in ("rules", "sink"):
        (c,) = [c for doc in documents(K8S / f"{name}.yaml") for c in doc["spec"]["template"]["spec"]["containers"]]
        assert {"configMapRef": {"name": "gpuhealth-fleet"}} in c["envFrom"], name
        svc = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"][name]
        assert svc["env_file"] == ["./compose/nats/fleet.env"], name  # `--out deploy/compose/nats`, as its header says
    code = "\n".join(p.read_text() for p in SOURCES)
    for var in ("GPUHEALTH_FLEET_NODES", "GPUHEALTH_FLEET_GPUS", "GPUHEALTH_FLEET_POLL_INTERVAL",
                "GPUHEALTH_METRICS_BUFFER_HOURS"):  # fmt: skip
        assert f'envvar="{var}"' in code, var
