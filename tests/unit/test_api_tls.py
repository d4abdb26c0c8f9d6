"""The local API over HTTPS, as GPUd serves it: the agent's own certificate, an operator's, and the guard's
promises (keep-alive, pipelining, no thread for a stalled client) kept over TLS."""

from __future__ import annotations

import argparse
import json
import os
import socket
import ssl
import stat
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuhealth.errors import ConfigError
from producers.api import Actions, Api
from producers.api_http import Limits
from producers.api_tls import CERT_FILE, KEY_FILE, make_certificate, own_context, server_context
from producers.local_api import api_tls_context
from tests import rawhttp
from tests.unit.test_api import TOKEN, Recorder, view

LIMITS = Limits(workers=2, idle_timeout=1.0, read_timeout=1.0, linger=0.5)


@pytest.fixture
def https(tmp_path: Path) -> Iterator[Api]:
    rec = Recorder()
    api = Api(view(), Actions(allow_inject=True, inject=rec.inject, set_healthy=rec.set_healthy), "127.0.0.1:0",
              token=TOKEN, limits=LIMITS, tls=own_context(tmp_path))  # fmt: skip
    api.start()
    try:
        yield api
    finally:
        api.close()


def verified_get(url: str, cafile: Path) -> object:
    """A GET that verifies the certificate against ``cafile``: its name (127.0.0.1) and its key."""
    ctx = ssl.create_default_context(cafile=str(cafile))
    with urllib.request.urlopen(url, timeout=10, context=ctx) as r:
        return json.loads(r.read())


def test_the_agents_certificate_is_made_private_and_kept(tmp_path: Path) -> None:
    own_context(tmp_path)
    cert, key = tmp_path / CERT_FILE, tmp_path / KEY_FILE
    first = cert.read_bytes()
    assert first.startswith(b"-----BEGIN CERTIFICATE-----")
    st = key.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()
    own_context(tmp_path)
    assert cert.read_bytes() == first  # kept across starts: a client that pinned it still connects
    assert sorted(p.name for p in tmp_path.iterdir()) == [CERT_FILE, KEY_FILE]  # no temporary left
    key.chmod(0o644)  # others could have read the key: a new pair
    own_context(tmp_path)
    assert cert.read_bytes() != first and stat.S_IMODE(key.stat().st_mode) == 0o600
    key.write_text("not a key\n")  # damaged: a new pair, not an agent that cannot start
    own_context(tmp_path)
    assert key.read_text().startswith("-----BEGIN PRIVATE KEY-----")


def test_the_api_serves_https_with_a_certificate_for_localhost(https: Api, tmp_path: Path) -> None:
    assert https.url == f"https://{https.address}"
    assert verified_get(https.url + "/healthz", tmp_path / CERT_FILE) == {"status": "ok", "version": "v1"}
    _, port = rawhttp.host_port(https.url)
    assert verified_get(f"https://localhost:{port}/healthz", tmp_path / CERT_FILE) == {"status": "ok", "version": "v1"}


def test_plain_http_on_the_https_port_gets_no_answer_and_harms_nothing(https: Api) -> None:
    status, _, _ = rawhttp.exchange(https.address, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status is None
    assert rawhttp.exchange(https.url, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")[0] == 200


def test_keep_alive_and_pipelined_requests_over_tls(https: Api) -> None:
    one = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    with rawhttp.connect(https.url) as s:
        s.sendall(one * 3)
        assert rawhttp.answers(s, 3) == [200, 200, 200]
    # A body, then a next request's head in the same TLS record: the worker reads the record for the body and
    # TLS keeps what its buffer did not take. The selector cannot see those bytes; it must read them itself.
    head = f"POST /v1/health-states/set-healthy?components=cpu HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
    padded = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 12000 + b"\r\n\r\n"
    with rawhttp.connect(https.url) as s:
        s.sendall(head.encode() + b"Content-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        assert s.recv(64).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")  # a worker is reading the body now
        s.sendall(b"{}" + padded)
        assert rawhttp.answers(s, 2) == [200, 200]


def test_stalled_handshakes_hold_no_worker_and_are_dropped(https: Api) -> None:
    host, port = rawhttp.host_port(https.url)
    stalled = [socket.create_connection((host, port), timeout=10) for _ in range(6)]  # 3x the workers
    stalled[0].sendall(b"\x16\x03\x01\x00\xff")  # half a ClientHello's record header, then nothing
    try:
        t = time.monotonic()
        assert rawhttp.exchange(https.url, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")[0] == 200
        assert time.monotonic() - t < LIMITS.idle_timeout  # served beside them, not after they time out
        deadline = time.monotonic() + 30
        while not all(rawhttp.closed_by_peer(s) for s in stalled):
            assert time.monotonic() < deadline, "stalled handshakes were never dropped"
            time.sleep(0.1)
    finally:
        for s in stalled:
            s.close()


def test_an_operators_certificate_is_used_and_a_wrong_one_refused(tmp_path: Path) -> None:
    cert, key = tmp_path / "site.pem", tmp_path / "site.key"
    make_certificate(cert, key)
    args = argparse.Namespace(api_tls="on", api_tls_cert=cert, api_tls_key=key)
    assert api_tls_context(args, tmp_path / "agent") is not None
    assert not (tmp_path / "agent").exists()  # no certificate of its own made beside the operator's
    make_certificate(tmp_path / "other.pem", tmp_path / "other.key")
    with pytest.raises(ConfigError, match="do not load"):
        server_context(cert, tmp_path / "other.key")  # another certificate's key
    with pytest.raises(ConfigError, match="go together"):
        api_tls_context(argparse.Namespace(api_tls="on", api_tls_cert=cert, api_tls_key=None), tmp_path)
    assert api_tls_context(argparse.Namespace(api_tls="off", api_tls_cert=None, api_tls_key=None), tmp_path) is None


def test_healthz_is_the_bytes_gpuds_go_client_compares(https: Api) -> None:
    """client/v1 CheckHealthz: 200 and bytes.Equal to Go's json.Marshal of {"status":"ok","version":"v1"}."""
    status, _, body = rawhttp.exchange(https.url, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (status, body) == (200, b'{"status":"ok","version":"v1"}')
