"""The README's Use section, run as written: every command of its shell blocks, copied from README.md by this
test, in order, with only what a test must change (the venv's path, /tmp made this test's own, the data dir
through $GPUHEALTH_DATA_DIR, sudo dropped when already root). `gpuctl up` runs "in one terminal" (in the
background) and the rest "in another"; a `# exit N` comment is the exit the README promises, once the pipeline
had a moment; any other command must succeed. A newcomer who follows the README meets what this test met."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuhealth.config import read_run_info
from tests.conftest import REPO

VENV_BIN = str(Path(sys.executable).parent) + "/"


def use_section_blocks() -> list[list[str]]:
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Use\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)\n```", section, re.S)
    return [[line for line in block.splitlines() if line.strip()] for block in blocks]


class Walk:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.data = tmp / "data"
        self.env = {**os.environ, "GPUHEALTH_DATA_DIR": str(self.data)}
        self.up: subprocess.Popen[str] | None = None
        self.background: list[subprocess.Popen[str]] = []

    def localise(self, line: str) -> str:
        line = line.replace(".venv/bin/", VENV_BIN).replace("/tmp/", f"{self.tmp}/")
        line = re.sub(r"(^|\| *)sudo ", r"\1", line) if os.geteuid() == 0 else line
        return line.replace("cp -a tests/data", f"cp -a {REPO}/tests/data")

    def start_up(self, command: str) -> None:
        self.stop_up()
        self.up = subprocess.Popen(f"exec {command}", shell=True, env=self.env, text=True, start_new_session=True,
                                   cwd=self.tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 60
        while read_run_info(self.data) is None:
            assert self.up.poll() is None, f"{command!r} exited with {self.up.returncode}"
            assert time.monotonic() < deadline, f"{command!r} not ready in 60 s"
            time.sleep(0.1)

    def stop_up(self) -> None:
        for p in self.background:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGINT)
            p.wait(timeout=30)
        self.background = []
        if self.up is not None:
            os.killpg(self.up.pid, signal.SIGINT)
            assert self.up.wait(timeout=30) == 0
            self.up = None

    def run(self, line: str) -> None:
        command, _, comment = line.partition("  #")
        command = self.localise(command.strip())
        if " gpuctl up " in f" {command} ".replace(VENV_BIN, " "):
            self.start_up(command)
            return
        if command.endswith("&"):
            self.background.append(subprocess.Popen(f"exec {command[:-1]}", shell=True, env=self.env, text=True, cwd=self.tmp,
                                                    start_new_session=True, stdout=subprocess.DEVNULL))  # fmt: skip
            time.sleep(3)  # a few of its nodes reported
            return
        promised = re.search(r"\bexit (\d+)\b", comment)
        want = {int(promised[1])} if promised else {0}
        if not promised and re.search(r"gpuctl (status|scan)\b", command):
            want = {0, 1, 2, 3}  # a verdict the README does not promise (what this machine's log says, …)
        deadline = time.monotonic() + 30
        while True:
            r = subprocess.run(["bash", "-o", "pipefail", "-c", command] if "dmesg |" not in command
                               else ["bash", "-c", command], env=self.env, capture_output=True, text=True,
                               cwd=self.tmp, timeout=120)  # fmt: skip
            if r.returncode in want or time.monotonic() > deadline:
                break
            time.sleep(0.5)  # the pipeline has not carried it yet
        assert r.returncode in want, (line, r.returncode, r.stdout[-1500:], r.stderr[-1500:])
        assert "Traceback" not in r.stderr, (line, r.stderr)


@pytest.fixture
def walk(tmp_path: Path) -> Iterator[Walk]:
    w = Walk(tmp_path)
    try:
        yield w
    finally:
        w.stop_up()


def test_the_use_section_runs_as_written(walk: Walk) -> None:
    blocks = use_section_blocks()
    assert len(blocks) >= 4 and shlex.split(blocks[0][0])[1] == "up", blocks[0]
    for block in blocks:
        for line in block:
            walk.run(line)
    assert "<svg" in (walk.tmp / "week.html").read_text()
