"""The local API's guard, in process over real sockets: the token file, who may write, and what one request or
one connection may hold. Short limits (1 s, 2 workers) so that a timeout is seen quickly; the defaults are
seen on a real agent in tests/e2e/test_api_guard.py."""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from producers.api import Actions, Api
from producers.api_auth import load_or_create_token
from producers.api_http import ClientError, Limits, check_depth
from tests import rawhttp
from tests.unit.test_api import TOKEN, Recorder, view

LIMITS = Limits(workers=2, idle_timeout=1.0, read_timeout=1.0, linger=0.5)
CLEAR = "/v1/health-states/set-healthy?components=accelerator-nvidia-error-xid"


@pytest.fixture
def api() -> Iterator[tuple[str, Recorder]]:
    rec = Recorder()
    server = Api(
        view(),
        Actions(allow_inject=True, inject=rec.inject, set_healthy=rec.set_healthy),
        "127.0.0.1:0",
        token=TOKEN,
        limits=LIMITS,
    )
    server.start()
    try:
        yield server.address, rec
    finally:
        server.close()


def post_head(path: str, framing: str, auth: str | None = f"Bearer {TOKEN}", extra: str = "") -> bytes:
    authorization = f"Authorization: {auth}\r\n" if auth is not None else ""
    return f"POST {path} HTTP/1.1\r\nHost: x\r\n{authorization}{extra}{framing}\r\n\r\n".encode()


def post(
    address: str, path: str, body: bytes, auth: str | None = f"Bearer {TOKEN}"
) -> tuple[int | None, dict[str, str], bytes]:
    return rawhttp.exchange(address, post_head(path, f"Content-Length: {len(body)}", auth) + body)


def healthz(address: str) -> float:
    t = time.monotonic()
    assert rawhttp.exchange(address, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")[0] == 200
    return time.monotonic() - t


# ---------------------------------------------------------------- the token file


def test_the_token_file_is_made_private_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "agent" / "api-token"
    token = load_or_create_token(path)
    assert len(token) >= 32 and path.read_text().strip() == token
    st = path.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()
    assert load_or_create_token(path) == token
    assert [p.name for p in path.parent.iterdir()] == ["api-token"]  # no temporary file left


def test_a_token_file_others_could_read_or_plant_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "api-token"
    token = load_or_create_token(path)
    path.chmod(0o644)  # it may have been read: a new token
    assert (second := load_or_create_token(path)) != token and stat.S_IMODE(path.stat().st_mode) == 0o600
    os.chown(path, 65534, 65534)  # someone else's file
    assert (third := load_or_create_token(path)) != second and path.stat().st_uid == os.geteuid()
    path.unlink()
    (tmp_path / "elsewhere").write_text("x" * 43)
    path.symlink_to(tmp_path / "elsewhere")  # a link to a token someone chose
    assert load_or_create_token(path) not in (third, "x" * 43) and not path.is_symlink()
    path.write_text("short\n")
    path.chmod(0o600)
    assert len(load_or_create_token(path)) >= 32


# ---------------------------------------------------------------- who may write


def test_writes_need_the_token_and_reads_do_not(api: tuple[str, Recorder]) -> None:
    address, rec = api
    status, headers, body = post(address, CLEAR, b"{}", auth=None)
    assert status == 401 and headers["www-authenticate"].startswith("Bearer") and b"token" in body
    assert post(address, CLEAR, b"{}", auth=f"Basic {TOKEN}")[0] == 401
    assert post(address, CLEAR, b"{}", auth="Bearer " + "u" * 43)[0] == 403
    assert post(address, CLEAR, b"{}", auth="Bearer " + TOKEN[:-1])[0] == 403
    assert post(address, CLEAR, b"{}", auth="Bearer t\xe9")[0] == 403  # not ASCII: refused, not a crash
    assert post(address, "/inject-fault", b'{"xid": {"id": 79}}', auth=None)[0] == 401
    assert rec.cleared == [] and rec.injected == []
    assert post(address, CLEAR, b"{}")[0] == 200 and rec.cleared == [["accelerator-nvidia-error-xid"]]
    assert rawhttp.exchange(address, b"GET /v1/states HTTP/1.1\r\nHost: x\r\n\r\n")[0] == 200


def test_expect_100_continue_only_once_the_token_is_right(api: tuple[str, Recorder]) -> None:
    address, rec = api
    body = b'{"xid": {"id": 48}}'
    framing = f"Content-Length: {len(body)}"
    with rawhttp.connect(address) as s:  # refused at once, without inviting the body
        s.sendall(post_head("/inject-fault", framing, auth=None, extra="Expect: 100-continue\r\n"))
        assert rawhttp.answer(s)[0] == 401
    with rawhttp.connect(address) as s:
        s.sendall(post_head("/inject-fault", framing, extra="Expect: 100-continue\r\n"))
        assert s.recv(64).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        s.sendall(body)
        assert rawhttp.answer(s)[0] == 200 and len(rec.injected) == 1


# ---------------------------------------------------------------- what a request may hold


@pytest.mark.parametrize(
    ("framing", "expected"),
    [
        ("Content-Length: -1", 400),
        ("Content-Length: lots", 400),
        ("Content-Length: 65537", 413),
        ("Content-Length: 99999999999999999999999", 400),
        ("Content-Length: 4\r\nContent-Length: 5", 400),
        ("Transfer-Encoding: chunked\r\nContent-Length: 4", 400),
        ("Transfer-Encoding: gzip", 501),
    ],
)
def test_a_bad_or_large_length_is_refused_unread(api: tuple[str, Recorder], framing: str, expected: int) -> None:
    address, rec = api
    status, sent = rawhttp.push(address, post_head("/inject-fault", framing), rawhttp.megabytes(50))
    assert status == expected and sent < 10 * 2**20 and rec.injected == []


def test_chunked_bodies_are_read_up_to_the_cap(api: tuple[str, Recorder]) -> None:
    address, rec = api
    body = b'{"xid": {"id": 48}}'
    chunked = b"%x\r\n%s\r\n%x;ext=1\r\n%s\r\n0\r\nX-Trailer: t\r\n\r\n" % (5, body[:5], len(body) - 5, body[5:])
    status, _, _ = rawhttp.exchange(address, post_head("/inject-fault", "Transfer-Encoding: chunked") + chunked)
    assert status == 200 and len(rec.injected) == 1
    status, sent = rawhttp.push(address, post_head("/inject-fault", "Transfer-Encoding: chunked"), rawhttp.chunked(50))
    assert status == 413 and sent < 10 * 2**20
    bad = post_head("/inject-fault", "Transfer-Encoding: chunked") + b"zz\r\nhello\r\n0\r\n\r\n"
    assert rawhttp.exchange(address, bad)[0] == 400
    assert len(rec.injected) == 1


def test_deep_json_is_refused_before_parsing_and_brackets_in_strings_are_fine(api: tuple[str, Recorder]) -> None:
    address, rec = api
    status, _, body = post(address, "/inject-fault", b"[" * 65536)
    assert status == 400 and b"too deep" in body
    assert post(address, "/inject-fault", b'{"a": ' * 40 + b"1" + b"}" * 40)[0] == 400
    message = json.dumps({"kernel_message": {"priority": 3, "message": "[{" * 100 + '"\\"[['}})
    assert post(address, "/inject-fault", message.encode())[0] == 200 and len(rec.injected) == 1
    assert healthz(address) < 1


def test_check_depth_counts_only_brackets_outside_strings() -> None:
    check_depth(b'{"a": [[["]]]]]]]]\\"[[[["]]]}', 4)
    with pytest.raises(ClientError):
        check_depth(b'{"a": [[[[1]]]]}', 4)


def test_a_huge_request_head_is_refused(api: tuple[str, Recorder]) -> None:
    address, _ = api
    headers = "".join(f"X-Pad-{i}: {'p' * 2000}\r\n" for i in range(30))  # 60 KiB: the stdlib alone allows 6 MB
    status, _, _ = rawhttp.exchange(address, f"GET /healthz HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
    assert status == 431
    assert healthz(address) < 1


def test_a_clients_error_is_one_log_line_never_a_traceback(
    api: tuple[str, Recorder], caplog: pytest.LogCaptureFixture
) -> None:
    address, _ = api
    caplog.set_level(logging.DEBUG, logger="gpuhealth.api")
    post(address, "/inject-fault", b"[" * 65536)
    post(address, "/inject-fault", b"{", auth=None)
    rawhttp.exchange(address, b"\x16\x03\x01garbage\r\n\r\n")
    rawhttp.push(address, post_head("/inject-fault", "Content-Length: -1"), rawhttp.megabytes(5))
    records = [r for r in caplog.records if r.name == "gpuhealth.api"]
    assert records and all(r.exc_info is None and r.levelno <= logging.WARNING for r in records)


# ---------------------------------------------------------------- what a connection may hold


def test_idle_connections_are_dropped_and_hold_no_worker(api: tuple[str, Recorder]) -> None:
    address, _ = api
    idle = [rawhttp.connect(address) for _ in range(20)]  # ten times the workers
    try:
        assert healthz(address) < 0.5
        time.sleep(LIMITS.idle_timeout + 0.6)
        assert all(rawhttp.closed_by_peer(s) for s in idle)
    finally:
        for s in idle:
            s.close()


def test_kept_alive_connections_are_reused_then_dropped_and_hold_no_worker(api: tuple[str, Recorder]) -> None:
    address, _ = api
    kept = [rawhttp.connect(address) for _ in range(10)]
    try:
        for s in kept:  # two requests each, the second pipelined behind the first
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * 2)
            assert rawhttp.answers(s, 2) == [200, 200]
        assert healthz(address) < 0.5  # ten idle kept-alive connections, two workers
        time.sleep(LIMITS.idle_timeout + 0.6)
        assert all(rawhttp.closed_by_peer(s) for s in kept)
    finally:
        for s in kept:
            s.close()


def test_slow_clients_hold_no_worker_and_are_dropped_at_their_deadline(api: tuple[str, Recorder]) -> None:
    address, _ = api
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X: y\r\n" * 100
    slow = [rawhttp.connect(address) for _ in range(10)]  # five times the workers, a byte each every 0.2 s
    t, dropped = time.monotonic(), {}
    try:
        for i in range(len(head)):
            for k, s in enumerate(slow):
                if k in dropped:
                    continue
                try:
                    s.sendall(head[i : i + 1])
                except OSError:
                    dropped[k] = time.monotonic() - t
                    continue
                if rawhttp.closed_by_peer(s):
                    dropped[k] = time.monotonic() - t
                s.setblocking(True)
            if i == 1:
                assert healthz(address) < 0.5  # while all ten trickle their heads in
            if len(dropped) == len(slow):
                break
            time.sleep(0.2)
    finally:
        for s in slow:
            s.close()
    assert len(dropped) == len(slow) and max(dropped.values()) < LIMITS.read_timeout + 1.0


def test_at_the_connection_cap_the_longest_idle_make_room() -> None:
    rec = Recorder()
    limits = Limits(workers=1, max_connections=4, idle_timeout=5.0, read_timeout=1.0)
    server = Api(
        view(),
        Actions(allow_inject=False, inject=rec.inject, set_healthy=rec.set_healthy),
        "127.0.0.1:0",
        token=TOKEN,
        limits=limits,
    )
    server.start()
    try:
        idle = [rawhttp.connect(server.address) for _ in range(limits.max_connections)]
        time.sleep(0.3)
        assert healthz(server.address) < 0.5  # not after the idle ones time out (5 s)
        assert rawhttp.closed_by_peer(idle[0]) and not any(rawhttp.closed_by_peer(s) for s in idle[2:])
        for s in idle:
            s.close()
    finally:
        server.close()


def test_a_request_queued_behind_a_busy_worker_waits_its_turn() -> None:
    rec = Recorder()
    limits = Limits(workers=1, idle_timeout=1.0, read_timeout=1.0)
    server = Api(
        view(),
        Actions(allow_inject=True, inject=rec.inject, set_healthy=rec.set_healthy),
        "127.0.0.1:0",
        token=TOKEN,
        limits=limits,
    )
    server.start()
    try:
        slow = [rawhttp.connect(server.address) for _ in range(2)]
        for s in slow:  # the one worker waits, twice in turn, for a body that never comes whole
            s.sendall(post_head("/inject-fault", "Content-Length: 100") + b"{")
        time.sleep(0.2)
        t = time.monotonic()
        assert healthz(server.address) < 2 * limits.read_timeout + 1.0  # answered once the worker is free
        assert time.monotonic() - t > 1.0  # (it did wait, longer than its own read timeout)
        for s in slow:
            s.close()
    finally:
        server.close()
