"""gpuctl as a user runs it: the installed console script, in its own process group."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from gpuhealth import bus, localauth, natsconf
from gpuhealth.config import RunInfo, read_run_info
from gpuhealth.natsd import EmbeddedNats

GPUCTL = str(Path(sys.executable).parent / "gpuctl")


def gpuctl(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GPUCTL, *args], capture_output=True, text=True, timeout=timeout)


def gpuctl_json(*args: str) -> tuple[int, object]:
    r = gpuctl(*args, "--json")
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None


@dataclass
class Up:
    data_dir: Path
    kmsg: Path
    proc: subprocess.Popen[str]
    log: Path

    @property
    def info(self) -> RunInfo:
        info = read_run_info(self.data_dir)
        assert info is not None
        return info

    async def connect(self, user: str = localauth.OPERATOR) -> NATS:
        """A raw client of this stack's NATS as one of its identities, its secret read from the data dir."""
        inbox = natsconf.agent_inbox(self.info.node) if user.startswith("agent-") else None
        secret = localauth.credentials(self.data_dir, user)
        return await bus.connect(
            self.info.nats_url, f"test-{user}", retry_for=10, inbox_prefix=inbox, credentials=secret
        )

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        os.killpg(self.proc.pid, sig)
        self.proc.wait(timeout=30)

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                return self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                raise
        return self.proc.returncode


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Nats:
    """A nats-server the test stops (or kills) and starts again on the same port and store."""

    def __init__(self, root: Path) -> None:
        self.port = free_port()
        self.argv = EmbeddedNats(root, port=self.port, auth=None).command()
        self.log = root / "nats-server.log"
        self.url = f"nats://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise AssertionError("nats-server did not start")

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.terminate()
        self.proc.wait(timeout=20)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=20)


def start_up(data_dir: Path, kmsg: Path, *extra: str, timeout: float = 60) -> Up:
    log = data_dir.parent / f"{data_dir.name}-up-{time.monotonic_ns()}.log"
    with log.open("w") as out:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            [
                GPUCTL,
                "up",
                "--data-dir",
                str(data_dir),
                "--kmsg-path",
                str(kmsg),
                "--node",
                "e2e-node",
                *(() if "--api-listen" in extra else ("--api-listen", "127.0.0.1:0")),
                *extra,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    up = Up(data_dir, kmsg, proc, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"gpuctl up exited with {proc.returncode}:\n{log.read_text()}")
        info = read_run_info(data_dir)
        if info is not None and info.pid == proc.pid:
            return up
        time.sleep(0.1)
    up.kill_group()
    raise AssertionError(f"gpuctl up was not ready in {timeout}s:\n{log.read_text()}")


@contextlib.contextmanager
def running(tmp_path: Path, *extra: str) -> Iterator[Up]:
    """gpuctl up over an empty kmsg file in tmp_path, stopped (Ctrl-C) afterwards."""
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    up = start_up(tmp_path / "data", kmsg, *extra)
    try:
        yield up
    finally:
        up.stop()


@pytest.fixture
def reachable() -> Iterator[Path]:
    """A directory every user may enter (pytest's own is 0700): only the data dir's modes keep nobody out."""
    with reachable_dir() as base:
        yield base


@contextlib.contextmanager
def reachable_dir() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="gpuhealth-e2e-"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def up_stack(tmp_path: Path) -> Iterator[Up]:
    with running(tmp_path) as up:
        yield up


@pytest.fixture
def simulated_stack(tmp_path: Path) -> Iterator[Up]:
    """A simulated 8-GPU node: the fake NVML, polled every second."""
    with running(tmp_path, "--simulate-gpus", "8", "--nvml-poll-interval", "1") as up:
        yield up


# Eventual checks get this much more time than their callers say: a loaded 2-core CI machine runs the whole
# stack (nats-server, chDB, agent, rules, sink) beside the tests; a failing check only fails later.
LOAD_SLACK = 2.0


def wait_for(predicate: object, timeout: float = 30, every: float = 0.2) -> None:
    timeout *= LOAD_SLACK
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(every)
    raise AssertionError(f"not true within {timeout}s")


def assert_shape(output: str, value: object) -> None:
    """The JSON a command printed matches its documented schema (gpuhealth/schema/cli.schema.json)."""
    import jsonschema

    from gpuctl.schema import output_schema

    schema = output_schema()
    jsonschema.validate(value, {"$defs": schema["$defs"], **schema["properties"][output]})
