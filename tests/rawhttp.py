"""HTTP/1.1 spoken badly on purpose, over plain sockets or TLS (an ``https://`` address, the agent's default):
the local API's tests, written as an attacker would."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import re
import select
import socket
import ssl
import time
from collections.abc import Iterable
from pathlib import Path

# As GPUd's clients dial it: TLS without verifying the self-signed certificate (tests that verify it say so).
UNVERIFIED = ssl.create_default_context()
UNVERIFIED.check_hostname, UNVERIFIED.verify_mode = False, ssl.CERT_NONE


def host_port(address: str) -> tuple[str, int]:
    host, _, port = address.removeprefix("http://").removeprefix("https://").rpartition(":")
    return host.strip("[]"), int(port)


def connect(address: str, timeout: float = 10) -> socket.socket:
    host, port = host_port(address)
    sock = socket.create_connection((host, port), timeout=timeout)
    return UNVERIFIED.wrap_socket(sock, server_hostname=host) if address.startswith("https://") else sock


def answer(sock: socket.socket) -> tuple[int | None, dict[str, str], bytes]:
    """The response on this socket: status, headers, body; None when the server closed without one."""
    resp = http.client.HTTPResponse(sock)
    try:
        resp.begin()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    except (http.client.HTTPException, ConnectionError):
        return None, {}, b""


def answers(sock: socket.socket, n: int) -> list[int]:
    """The statuses of the next n responses on a kept-alive connection (one reader, so none is lost)."""
    data, statuses = b"", []
    while len(statuses) < n:
        while b"\r\n\r\n" not in data:
            more = sock.recv(65536)
            assert more, f"closed after {statuses}"
            data += more
        head, _, data = data.partition(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: *([0-9]+)", head).group(1))  # type: ignore[union-attr]
        while len(data) < length:
            data += sock.recv(65536)
        statuses.append(int(head.split(b" ", 2)[1]))
        data = data[length:]
    return statuses


def exchange(address: str, raw: bytes, timeout: float = 10) -> tuple[int | None, dict[str, str], bytes]:
    """Send these bytes as they are and read what comes back."""
    with connect(address, timeout) as s:
        s.sendall(raw)
        return answer(s)


def _readable(s: socket.socket) -> bool:
    """poll(2), not select(2): the suite's process holds hundreds of chDB's files, and select() refuses a
    descriptor past 1023."""
    poller = select.poll()
    poller.register(s, select.POLLIN)
    return bool(poller.poll(0))


def push(address: str, head: bytes, chunks: Iterable[bytes], timeout: float = 30) -> tuple[int | None, int]:
    """Send a head, then a body for as long as the server has not answered: (status, body bytes sent)."""
    sent = 0
    with connect(address, timeout) as s:
        s.sendall(head)
        for chunk in chunks:
            if _readable(s):
                break  # it answered (or closed) without waiting for the rest
            try:
                s.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLEOFError):  # it closed after answering
                break
            sent += len(chunk)
        with contextlib.suppress(OSError):
            socket.socket.shutdown(s, socket.SHUT_WR)  # TCP's half-close: SSLSocket's own would drop its TLS state
        return answer(s)[0], sent


def megabytes(n: int, chunk: bytes = b"a" * (1 << 20)) -> Iterable[bytes]:
    for _ in range(n):
        yield chunk


def chunked(n: int) -> Iterable[bytes]:
    """n MiB as 1 MiB chunks of chunked transfer coding, then its end."""
    for part in megabytes(n):
        yield b"%x\r\n" % len(part) + part + b"\r\n"
    yield b"0\r\n\r\n"


async def _one(host: str, port: int, path: str, tls: ssl.SSLContext | None) -> tuple[float, int]:
    t = time.monotonic()
    reader, writer = await asyncio.open_connection(host, port, ssl=tls)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        data = await reader.read()
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.") else 0
    return time.monotonic() - t, status


async def _flood(address: str, paths: list[str], total: int, concurrency: int) -> list[tuple[float, int]]:
    host, port = host_port(address)
    tls = UNVERIFIED if address.startswith("https://") else None
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> tuple[float, int]:
        async with gate:
            try:
                return await asyncio.wait_for(_one(host, port, paths[i % len(paths)], tls), 60)
            except (OSError, TimeoutError):
                return 60.0, 0

    return await asyncio.gather(*(one(i) for i in range(total)))


def flood(address: str, paths: list[str], total: int, concurrency: int) -> list[tuple[float, int]]:
    """total GETs, concurrency at a time, each on its own connection: (seconds, status) of each."""
    return asyncio.run(_flood(address, paths, total, concurrency))


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def closed_by_peer(sock: socket.socket) -> bool:
    """Whether the server has closed this connection (EOF or reset), without waiting."""
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except (BlockingIOError, ssl.SSLWantReadError):
        return False
    except (ConnectionError, ssl.SSLError):
        return True


def rss_mb(pid: int) -> tuple[float, float]:
    """(resident now, resident peak since the last reset_peak) of a process, in MB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def threads(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/task").iterdir()))


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux 4.0+)


def pid_of(*words: str) -> int:
    """The one process whose command line has all these words."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                if all(w.encode() in argv for w in words) and proc.name != str(os.getpid()):
                    found.append(int(proc.name))
    assert len(found) == 1, found
    return found[0]
