"""gpuctl parse / scan / inject-fault as a user runs them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from producers.kernel import classify
from tests.conftest import need
from tests.e2e.conftest import GPUCTL, gpuctl
from tests.unit.test_kernel import CORPUS


def test_parse_prints_one_object_per_line_in_order() -> None:
    need(CORPUS.exists(), "../shared/corpus (beside this checkout)")
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    lines = "\n".join(r["line"] for r in rows) + "\n"
    r = subprocess.run([GPUCTL, "parse", "--json"], input=lines, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(out) == len(rows)
    for got, want in zip(out, rows, strict=True):
        assert set(got) == {"kind", "xid", "sxid", "pci_bus_id", "pid", "process_name"}
        # The kinds' accuracy is test_kernel_accuracy's (a few corpus labels differ from the labelling guide
        # on purpose): here, each line's kind is the one the classifier gives it, in the line's place.
        assert got["kind"] == classify(str(want["line"])).kind
        assert (got["xid"], got["sxid"], got["pci_bus_id"]) == (want["xid"], want["sxid"], want["pci_bus_id"])


def test_parse_survives_binary_garbage() -> None:
    r = subprocess.run([GPUCTL, "parse"], input=b"\xff\xfe\x00garbage\n\n" + b"x" * 100_000 + b"\n",
                       capture_output=True, timeout=60)  # fmt: skip
    assert r.returncode == 0
    assert [json.loads(line)["kind"] for line in r.stdout.splitlines()] == [None, None, None]


def test_scan_reports_fatal_faults_with_catalog_actions(tmp_path: Path) -> None:
    log = tmp_path / "dmesg.txt"
    log.write_text(
        "[  1.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07\n"
        + "[ 10.0] NVRM: Xid (PCI:0000:04:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n" * 3
        + "[ 11.0] NVRM: Xid (PCI:0000:05:00): 13, pid=12, name=python, Graphics Exception\n"
    )
    r = gpuctl("scan", "--dmesg", str(log), "--json")
    assert r.returncode == 2
    body = json.loads(r.stdout)
    by_code = {f["xid"]: f for f in body["findings"]}
    assert by_code[79]["count"] == 3 and by_code[79]["severity"] == "Fatal"
    assert by_code[79]["repair_actions"][0] == "REBOOT_SYSTEM"
    assert body["worst"] == "Unhealthy"
    r = gpuctl("scan", "--dmesg", str(log))
    assert r.returncode == 2 and "verdict: Unhealthy" in r.stdout and "0000:04:00.0" in r.stdout


def test_scan_of_a_clean_log_exits_0(tmp_path: Path) -> None:
    log = tmp_path / "dmesg.txt"
    log.write_text("[ 1.0] eth0: link becomes ready\n")
    r = gpuctl("scan", "--dmesg", str(log))
    assert (r.returncode, r.stdout.strip()) == (0, "no faults found")


def test_errors_are_one_line_without_a_traceback(tmp_path: Path) -> None:
    r = gpuctl("scan", "--dmesg", str(tmp_path / "missing"))
    assert r.returncode == 64 and r.stderr.startswith("gpuctl: cannot read") and "Traceback" not in r.stderr
    r = gpuctl("inject-fault", "--xid", "79", "--kmsg-path", str(tmp_path / "k"))
    assert r.returncode == 64 and "--pci" in r.stderr and "Traceback" not in r.stderr
    r = gpuctl("events", "--since", "yesterday", "--data-dir", str(tmp_path))
    assert r.returncode == 64 and "bad duration" in r.stderr


def test_usage_errors_never_exit_with_a_verdict(tmp_path: Path) -> None:
    """0-3 are health verdicts to Nagios, NHC and Slurm: a mistyped flag or command is 64, not 2 (Unhealthy)."""
    for argv in (["status", "--nod", "x"], ["statsu"], ["events", "--limit", "many"], ["scan", "--json=yes"]):
        r = gpuctl(*argv, "--data-dir", str(tmp_path))
        assert r.returncode == 64 and r.stdout == "", (argv, r.returncode, r.stdout)
        assert "Traceback" not in r.stderr and r.stderr.strip(), argv


def test_inject_fault_never_writes_where_no_gpuhealth_reads_unless_forced(tmp_path: Path) -> None:
    """With nothing running it once wrote a fake 'Xid 79: fallen off the bus' into the machine's real kernel
    log and exited 0: any tool reading that log could have drained the node."""
    nothing = str(tmp_path / "nothing-runs-here")
    xid = ["inject-fault", "--xid", "79", "--pci", "0000:04:00.0", "--data-dir", nothing]
    r = gpuctl(*xid)
    assert r.returncode == 69 and "nothing written" in r.stderr and r.stdout == "", (r.returncode, r.stderr)
    # A character device is a real kernel log (/dev/kmsg): /dev/null stands in for it here, harmlessly.
    r = gpuctl(*xid, "--kmsg-path", "/dev/null")
    assert r.returncode == 64 and "--force" in r.stderr and r.stdout == "", (r.returncode, r.stderr)
    r = gpuctl(*xid, "--kmsg-path", "/dev/null", "--force")
    assert r.returncode == 0 and r.stdout.startswith("injected into /dev/null"), r.stderr
    # A file named on purpose (a test's, a simulation's) is written, and the output says where.
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    r = gpuctl(*xid, "--kmsg-path", str(kmsg))
    assert r.returncode == 0 and str(kmsg) in r.stdout
    assert "NVRM: Xid (PCI:0000:04:00): 79" in kmsg.read_text()
