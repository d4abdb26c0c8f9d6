"""The host facts of GPUd's /machine-info, read from a recorded /proc and a written /etc."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from producers.machine import host_facts

PROC = Path(__file__).resolve().parent.parent / "data" / "proc"


def test_host_facts_from_proc_and_etc(tmp_path: Path) -> None:
    (tmp_path / "os-release").write_text('NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\nVERSION_ID="22.04"\n')
    facts = host_facts(PROC / "h100-8gpu", tmp_path)
    assert facts["memoryInfo"] == {"totalBytes": 2113478656 * 1024}  # MemTotal in the recorded meminfo, in kB
    assert facts["osImage"] == "Ubuntu 22.04.4 LTS"
    assert facts["operatingSystem"] == "linux" and facts["kernelVersion"] == os.uname().release
    # No cpuinfo in the recording: no model or vendor (GPUd omits empty fields), the machine's own cores.
    assert facts["cpuInfo"] == {"architecture": platform.machine(), "logicalCores": os.cpu_count()}


def test_unreadable_host_facts_are_left_out(tmp_path: Path) -> None:
    facts = host_facts(tmp_path / "no-proc", tmp_path / "no-etc")
    assert "memoryInfo" not in facts and "osImage" not in facts
    assert facts["hostname"]  # the kernel's, always there
