"""A real one-machine Slurm for the responder's tests: munged, slurmctld and one slurmd per fake node
(Debian's slurm-wlm runs several slurmd on one host, each with ``-N name`` and its own port), all in the
foreground as the test's own user (root or not: no job ever runs), with their own config, state, spool,
logs, munge key and socket under one directory."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.e2e.conftest import free_port

NODES = [f"n{i}" for i in range(1, 6)]

_CONF = """\
ClusterName=gpuhealth-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
AuthInfo=socket={root}/munge/sock
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.%n.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/linear
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MessageTimeout=3
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def available() -> bool:
    """Slurm and munge installed (deploy/test-deps.sh)."""
    return all(shutil.which(t) for t in ("munged", "slurmctld", "slurmd", "scontrol", "sinfo"))


class LocalSlurm:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        for d in ("state", "log", "munge", *(f"spool/{n}" for n in NODES)):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        key = self.root / "munge" / "key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        nodes = "\n".join(
            f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={free_port()} CPUs=1 RealMemory=100"
            for n in NODES
        )
        user = pwd.getpwuid(os.geteuid()).pw_name
        conf = _CONF.format(root=self.root, ctld_port=free_port(), d_port=free_port(), user=user)
        self.conf.write_text(conf + nodes + "\n")
        m = self.root / "munge"
        self._spawn("munged", "-F", "-f", f"--socket={m}/sock", f"--key-file={key}", f"--pid-file={m}/pid",
                    f"--seed-file={m}/seed", f"--log-file={self.root}/log/munged.log")  # fmt: skip
        self._until(lambda: (m / "sock").exists(), "munged's socket")
        self._spawn("slurmctld", "-D", "-c", "-f", str(self.conf))
        self.controller = self.procs[-1]
        self._until(lambda: self.run("scontrol", "ping").returncode == 0, "slurmctld answering scontrol ping")
        for n in NODES:
            self._spawn("slurmd", "-D", "-N", n, "-f", str(self.conf))
        self._until(lambda: self.states() == dict.fromkeys(NODES, "idle"), "every slurmd registered idle")

    def _spawn(self, *argv: str) -> None:
        name = argv[0] if argv[0] != "slurmd" else f"slurmd-{argv[3]}"
        with (self.root / "log" / f"{name}.out").open("ab") as out:
            self.procs.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=self.env))

    def _until(self, ok: object, what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ok():  # type: ignore[operator]
                return
            if any(p.poll() is not None for p in self.procs):
                raise AssertionError(f"a Slurm daemon exited waiting for {what}; logs in {self.root / 'log'}")
            time.sleep(0.1)
        raise AssertionError(f"no {what} within {timeout}s; logs in {self.root / 'log'}")

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=30)

    def states(self) -> dict[str, str]:
        """node -> sinfo's long state (idle, drained, draining, down*, ...)."""
        out = self.run("sinfo", "-h", "-N", "-o", "%N %T").stdout
        return dict(line.split(" ", 1) for line in out.splitlines() if line.strip())

    def reason(self, node: str) -> str:
        return self.run("sinfo", "-h", "-N", "-n", node, "-o", "%E").stdout.strip()

    def drain_by_hand(self, node: str, reason: str) -> None:
        r = self.run("scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}")
        assert r.returncode == 0, r.stderr

    def reset(self) -> None:
        """Every node back in service, for the next test (resume refuses a node that is not drained)."""
        for n, state in self.states().items():
            if state != "idle":
                self.run("scontrol", "update", f"NodeName={n}", "State=RESUME")
        self._until(lambda: self.states() == dict.fromkeys(NODES, "idle"), "every node idle again")

    def pause_controller(self) -> None:
        """slurmctld not answering, as in a controller outage: stopped, not restarted (a restart would
        recover its state from disk, another test's business)."""
        self.controller.send_signal(signal.SIGSTOP)

    def continue_controller(self) -> None:
        self.controller.send_signal(signal.SIGCONT)
        self._until(lambda: self.run("scontrol", "ping").returncode == 0, "slurmctld answering again")

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
