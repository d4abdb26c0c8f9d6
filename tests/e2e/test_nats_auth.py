"""NATS credentials: from the URL, the environment or gpuctl's options; refused credentials are one clear
line (not "nothing answers"); a password never shows."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuhealth.bus import auth_options, redact
from gpuhealth.natsd import find_binary
from tests.e2e.conftest import GPUCTL, gpuctl, running

SECRET = "s3cret-pw-1234"


@pytest.fixture
def guarded_nats(tmp_path: Path) -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([find_binary(), "--addr", "127.0.0.1", "--port", str(port), "--jetstream",
                               "--store_dir", str(tmp_path / "js"), "--user", "ops", "--pass", SECRET],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.terminate()
        server.wait(timeout=10)


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("GPUHEALTH_NATS_")} | (env or {})
    return subprocess.run([GPUCTL, *args], capture_output=True, text=True, timeout=60, env=full)


def test_credentials_from_the_url_the_environment_or_options(guarded_nats: int, tmp_path: Path) -> None:
    url = f"nats://127.0.0.1:{guarded_nats}"
    refused = run("status", "--nats", url)
    assert refused.returncode == 77 and "refused the credentials" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    wrong = run("status", "--nats", f"nats://ops:wrong-{SECRET}@127.0.0.1:{guarded_nats}")
    assert wrong.returncode == 77 and SECRET not in wrong.stderr and "***" in wrong.stderr
    # Accepted: the server answers, and without gpuhealth's buckets provisioned it says so (exit 69).
    for r in (
        run("status", "--nats", f"nats://ops:{SECRET}@127.0.0.1:{guarded_nats}"),
        run("status", "--nats", url, env={"GPUHEALTH_NATS_USER": "ops", "GPUHEALTH_NATS_PASSWORD": SECRET}),
        run("--nats-user", "ops", "status", "--nats", url, env={"GPUHEALTH_NATS_PASSWORD": SECRET}),
    ):
        assert r.returncode == 69 and "not found" in r.stderr and "refused" not in r.stderr, r.stderr
        assert SECRET not in r.stderr + r.stdout


def test_up_on_a_given_server_uses_the_environments_credentials(
    guarded_nats: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUHEALTH_NATS_USER", "ops")
    monkeypatch.setenv("GPUHEALTH_NATS_PASSWORD", SECRET)
    with running(tmp_path, "--nats", f"nats://127.0.0.1:{guarded_nats}") as up:
        # Not its own server: no identities of its own, and gpuctl connects as the environment says.
        assert not up.info.embedded_nats and not (up.data_dir / "secrets").exists()
        assert gpuctl("status", "--data-dir", str(up.data_dir)).returncode == 0
        refused = run("status", "--data-dir", str(up.data_dir))  # without the environment's credentials
        assert refused.returncode == 77 and "refused the credentials" in refused.stderr


def test_auth_options_and_redaction(tmp_path: Path) -> None:
    assert auth_options({}) == {}
    opts = auth_options({"GPUHEALTH_NATS_CREDS": "/etc/gpuhealth/agent.creds", "GPUHEALTH_NATS_TOKEN": "t0k"})
    assert opts == {"user_credentials": "/etc/gpuhealth/agent.creds", "token": "t0k"}
    assert redact("nats://ops:pw@h:4222") == "nats://ops:***@h:4222"
    assert redact("tls://s3cr3ttoken@h:4222") == "tls://***@h:4222"
    assert redact("nats://h:4222") == "nats://h:4222"
