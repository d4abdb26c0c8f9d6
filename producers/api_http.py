"""HTTP/1.1 for the local API, one request at a time, from a client that may be hostile.

The standard library parses requests; this bounds what one may hold: its head at most ``max_head`` bytes,
its body at most ``max_body`` (by Content-Length or chunked, refused before it is read), its JSON at most
``max_depth`` deep (refused before it is parsed). A client's mistake is one log line, never a traceback.
Who gets a thread, and for how long, is ``api_server``'s.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import logging
import re
import socket
import ssl
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

log = logging.getLogger("gpuhealth.api")


@dataclass(frozen=True)
class Limits:
    """What the API gives any one client, and all of them together (seconds, bytes, counts)."""

    workers: int = 8  # handlers are short and share the GIL: more threads would only cost memory
    max_connections: int = 256  # each may hold up to max_head bytes of a head in arrival
    backlog: int = 511  # as nginx: a burst of 200 connects waits here, not in SYN retries a second apart
    idle_timeout: float = 5.0
    read_timeout: float = 5.0
    write_timeout: float = 30.0  # a write waits for the agent's event loop (up to 10 s)
    max_head: int = 32 * 1024
    max_body: int = 64 * 1024
    max_depth: int = 32
    linger: float = 1.0  # after refusing an unread body: how long its rest is read and dropped
    linger_bytes: int = 1 << 20


class ClientError(Exception):
    """A request refused: the status, why, and any headers the answer needs (WWW-Authenticate)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


_BRACKETS = b'"\\[]{}'
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _BRACKETS)


def check_depth(data: bytes, limit: int) -> None:
    """Refuse JSON nested deeper than ``limit`` before the parser recurses into it."""
    depth, in_string, escaped = 0, False, False
    for c in data.translate(None, _NOT_BRACKETS):  # only quotes, backslashes and brackets matter
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:
                escaped = True
            elif c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                raise ClientError(400, f"the JSON body is nested too deep (more than {limit} levels)")
        elif c in (0x5D, 0x7D):
            depth -= 1


class _SocketReader(io.RawIOBase):
    """The socket, after the bytes already read from it (by the selector: a request's head)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.early = sock, bytearray()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int | None:
        out = memoryview(buffer).cast("B")
        if self.early:
            n = min(len(out), len(self.early))
            out[:n] = self.early[:n]
            del self.early[:n]
            return n
        try:
            return self.sock.recv_into(out)
        except (BlockingIOError, ssl.SSLWantReadError):
            return None  # nothing yet on a socket in non-blocking mode


class Connection:
    """One client's socket and reader, kept across the requests of a kept-alive connection."""

    def __init__(self, sock: socket.socket, address: Any, *, handshaking: bool = False) -> None:
        self.sock, self.address = sock, address
        self.handshaking = handshaking  # TLS: the selector steps the handshake before any request
        self.raw = _SocketReader(sock)
        self.rfile = io.BufferedReader(self.raw)
        self.wfile = sock.makefile("wb")
        self.deadline = 0.0
        self.busy = False  # a worker has it
        self.draining = False  # refused with its body unread: what still comes is read and dropped
        self.drained = 0
        self.shut = False
        self._scanned = 0

    def head_arrived(self, max_head: int) -> bool:
        """Whether the selector holds a whole request head (or more than one may be): a worker may take it."""
        early = self.raw.early
        start, self._scanned = max(0, self._scanned - 3), len(early)
        return early.find(b"\r\n\r\n", start) >= 0 or early.find(b"\n\n", start) >= 0 or len(early) >= max_head

    def unread(self) -> None:
        """Put what the reader holds (a pipelined next request) back in front of the socket, for the selector."""
        timeout = self.sock.gettimeout()
        self.sock.setblocking(False)
        try:
            held = self.rfile.peek(1 << 16)
            self.rfile.read(len(held))
        except OSError:
            held = b""
        finally:
            self.sock.settimeout(timeout)
        self.raw.early[:0] = held
        self._scanned = 0

    def close(self) -> None:
        for f in (self.rfile, self.wfile):
            with contextlib.suppress(OSError):
                f.close()
        self.sock.close()


class _Head(io.BufferedIOBase):
    """The request line and headers, at most ``budget`` bytes together (the stdlib alone allows 100 lines of 64 KiB)."""

    def __init__(self, rfile: io.BufferedIOBase, budget: int) -> None:
        self.raw_file, self.left = rfile, budget

    def readline(self, size: int | None = -1) -> bytes:
        if self.left <= 0:
            raise http.client.LineTooLong("request head")  # the stdlib answers 431 (or 400 in the request line)
        limit = self.left if size is None or size < 0 else min(size, self.left)
        line = self.raw_file.readline(limit)
        self.left -= len(line)
        return line


class GuardedHandler(BaseHTTPRequestHandler):
    """One request of a connection: the stdlib's parsing, with bounded bodies, JSON and answers."""

    protocol_version = "HTTP/1.1"  # keep-alive: a kept connection waits in the selector, not in a worker
    server_version = "gpuhealth"
    limits: Limits

    def __init__(self, conn: Connection, limits: Limits) -> None:  # not the stdlib's: no handling on creation
        self.conn, self.limits = conn, limits
        self.connection = self.request = conn.sock
        self.client_address = conn.address
        self.rfile = _Head(conn.rfile, limits.max_head)
        self.wfile = conn.wfile
        self.close_connection = True
        self.body_unread = False
        self.expect_continue = False

    def log_message(self, format: str, *args: Any) -> None:  # the stdlib's name
        log.debug("api %s: " + format, self.client_address[0], *args)

    def parse_request(self) -> bool:
        ok = super().parse_request()
        if ok:
            self.body_unread = "Content-Length" in self.headers or "Transfer-Encoding" in self.headers
        return ok

    def handle_expect_100(self) -> bool:
        self.expect_continue = True  # "100 Continue" only once the request may send its body (read_body)
        return True

    def send_response(self, code: int, message: str | None = None) -> None:
        self.conn.deadline = time.monotonic() + self.limits.write_timeout
        super().send_response(code, message)

    def respond(
        self,
        code: int,
        body: Any,
        content_type: str = "application/json; charset=utf-8",  # as gin writes it
        headers: dict[str, str] | None = None,
    ) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()  # as Go writes it
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.body_unread:  # what follows is the body we refused, not a next request
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def refuse(self, e: ClientError) -> None:
        """A client's error: its answer and one log line."""
        level = logging.WARNING if e.status in (401, 403) else logging.DEBUG
        throttled_log(
            level,
            "api %s: %s %s refused with %d: %s",
            self.client_address[0],
            self.command,
            self.path[:200],
            e.status,
            e.message,
        )
        self.respond(e.status, {"code": e.status, "message": e.message}, headers=e.headers)  # GPUd's error body

    def read_body(self) -> bytes:
        """The request's body, by Content-Length or chunked, refused past ``max_body`` before it is read."""
        cap = self.limits.max_body
        lengths = self.headers.get_all("Content-Length") or []
        coding = self.headers.get("Transfer-Encoding")
        if coding is not None:
            if lengths:
                raise ClientError(400, "Content-Length and Transfer-Encoding together")
            if coding.strip().lower() != "chunked":
                raise ClientError(501, f"transfer coding {coding[:40]!r} is not supported: use chunked")
        elif not lengths:
            self.body_unread = False
            return b""
        elif len(set(lengths)) != 1 or not re.fullmatch(r"[0-9]{1,19}", lengths[0].strip()):
            raise ClientError(400, "a bad Content-Length")
        elif int(lengths[0]) > cap:
            raise ClientError(413, f"the body is over {cap} bytes")
        if self.expect_continue:
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.wfile.flush()
        data = self._read_chunked(cap) if coding is not None else self._read_exactly(int(lengths[0]))
        self.body_unread = False
        self.conn.deadline = time.monotonic() + self.limits.write_timeout
        return data

    def read_json(self) -> Any:
        data = self.read_body()
        if not data:
            return None
        check_depth(data, self.limits.max_depth)
        try:
            return json.loads(data)
        except (ValueError, RecursionError) as e:  # RecursionError cannot happen after check_depth; belt and braces
            raise ClientError(400, f"the body is not JSON: {e}") from None

    def _read_exactly(self, n: int) -> bytes:
        data = self.conn.rfile.read(n)
        if len(data) < n:
            raise ClientError(400, "the body ended early")
        return data

    def _read_chunked(self, cap: int) -> bytes:
        body = bytearray()
        while True:
            line = self.conn.rfile.readline(1024)
            size = line.split(b";", 1)[0].strip()
            if not line.endswith(b"\n") or not re.fullmatch(rb"[0-9A-Fa-f]{1,8}", size):
                raise ClientError(400, "a bad chunk size line")
            n = int(size, 16)
            if n == 0:
                break
            if len(body) + n > cap:
                raise ClientError(413, f"the body is over {cap} bytes")
            body += self._read_exactly(n)
            if self.conn.rfile.readline(3) not in (b"\r\n", b"\n"):
                raise ClientError(400, "a chunk without its line end")
        for _ in range(32):  # trailers, dropped
            line = self.conn.rfile.readline(1024)
            if line in (b"\r\n", b"\n"):
                return bytes(body)
            if not line.endswith(b"\n"):
                break
        raise ClientError(400, "bad chunk trailers")


class _Throttle:
    last, dropped = 0.0, 0  # when a warning was last logged, and how many were made debug lines since


def throttled_log(level: int, msg: str, *args: Any) -> None:
    """Warnings about clients, at most one a second: a local process must not be able to flood the journal."""
    if level >= logging.WARNING:
        now = time.monotonic()
        if now - _Throttle.last < 1.0:
            _Throttle.dropped += 1
            level = logging.DEBUG
        else:
            if _Throttle.dropped:
                msg += f" ({_Throttle.dropped} more since, logged at debug level)"
            _Throttle.last, _Throttle.dropped = now, 0
    log.log(level, msg, *args)
