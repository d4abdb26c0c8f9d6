"""The local API's listener: a selector thread, a fixed pool of workers, and a deadline on every connection.

- The selector thread accepts connections and keeps those with nothing to say (new, kept alive, or being
  drained after a refusal); the workers handle requests that have arrived. An idle or kept-alive connection
  holds no thread, and 200 concurrent clients wait in a queue, not on a backlog of 5.
- A connection idle for ``idle_timeout`` is closed; a request must arrive whole within ``read_timeout`` and
  be answered within ``write_timeout``, else its socket is shut down under its worker.
- At most ``max_connections`` are open; beyond that new ones wait in the kernel's backlog (``backlog``).

What one request may hold (its head, body and JSON) is ``api_http``'s.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import queue
import selectors
import socket
import threading
import time

from producers.api_http import Connection, GuardedHandler, Limits

log = logging.getLogger("gpuhealth.api")


class Server:
    """A listening socket, a selector thread and a pool of workers running ``handler`` per request."""

    def __init__(self, host: str, port: int, handler: type[GuardedHandler], limits: Limits) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.create_server((host, port), family=family, backlog=limits.backlog)
        self.sock.setblocking(False)
        self.address: tuple[str, int] = self.sock.getsockname()[:2]
        self.handler, self.limits = handler, limits
        self._selector = selectors.DefaultSelector()
        self._ready: queue.SimpleQueue[Connection | None] = queue.SimpleQueue()
        self._back: queue.SimpleQueue[Connection] = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._open: set[Connection] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._accepting = False
        self._threads = [threading.Thread(target=self._select_loop, name="api-select", daemon=True)]
        self._threads += [
            threading.Thread(target=self._work, name=f"api-{i}", daemon=True) for i in range(limits.workers)
        ]
        self._drop = bytearray(65536)

    def start(self) -> None:
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._set_accepting(True)
        for t in self._threads:
            t.start()

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        with self._lock:
            for conn in self._open:
                self._shut(conn)
        for _ in range(self.limits.workers):
            self._ready.put(None)
        for t in self._threads:
            if t.is_alive():
                t.join(5)
        with self._lock:
            for conn in self._open:
                conn.close()
            self._open.clear()
        self._selector.close()
        for s in (self.sock, self._wake_r, self._wake_w):
            s.close()

    # ---------------------------------------------------------------- the selector thread

    def _set_accepting(self, on: bool) -> None:
        if on and not self._accepting:
            self._selector.register(self.sock, selectors.EVENT_READ)
        elif self._accepting and not on:
            self._selector.unregister(self.sock)
        self._accepting = on

    def _select_loop(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=0.25):
                if key.fileobj is self.sock:
                    self._accept()
                elif key.fileobj is self._wake_r:
                    with contextlib.suppress(OSError):
                        self._wake_r.recv(4096)
                else:
                    self._readable(key.data)
            while True:
                try:
                    conn = self._back.get_nowait()
                except queue.Empty:
                    break
                conn.sock.setblocking(False)
                self._selector.register(conn.sock, selectors.EVENT_READ, conn)
            self._sweep()

    def _accept(self) -> None:
        for _ in range(64):  # a burst, then the other connections get their turn
            try:
                sock, address = self.sock.accept()
            except BlockingIOError:
                return
            except OSError as e:  # out of descriptors: stop accepting until some close
                log.warning("api: accept failed: %s", e)
                self._set_accepting(False)
                return
            conn = Connection(sock, address)
            sock.setblocking(False)
            conn.deadline = time.monotonic() + self.limits.idle_timeout
            with self._lock:
                self._open.add(conn)
                full = len(self._open) >= self.limits.max_connections
            self._selector.register(sock, selectors.EVENT_READ, conn)
            if full:
                self._set_accepting(False)
                return

    def _readable(self, conn: Connection) -> None:
        if conn.draining:
            try:
                n = conn.sock.recv_into(self._drop)
            except BlockingIOError:
                return
            except OSError:
                n = 0
            conn.drained += n
            if n == 0 or conn.drained > self.limits.linger_bytes:
                self._forget(conn)
            return
        self._selector.unregister(conn.sock)
        conn.sock.settimeout(self.limits.read_timeout)  # each read or write; the deadline bounds the whole
        conn.deadline = time.monotonic() + self.limits.read_timeout
        conn.busy = True
        self._ready.put(conn)

    def _sweep(self) -> None:
        now = time.monotonic()
        with self._lock:
            late = [c for c in self._open if c.deadline < now]
        for conn in late:
            if conn.busy:
                log.debug("api %s: too slow; dropped", conn.address[0])
                self._shut(conn)  # its worker's read or write returns at once and the worker closes it
            else:
                self._forget(conn)
        with self._lock:
            room = len(self._open) < self.limits.max_connections
        if room and not self._stop.is_set():
            self._set_accepting(True)

    def _forget(self, conn: Connection) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        with self._lock:
            self._open.discard(conn)
        conn.close()

    @staticmethod
    def _shut(conn: Connection) -> None:
        if not conn.shut:
            conn.shut = True
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)

    # ---------------------------------------------------------------- the workers

    def _work(self) -> None:
        while (conn := self._ready.get()) is not None:
            keep, linger = False, False
            try:
                keep, linger = self._serve(conn)
            except (OSError, ValueError, http.client.HTTPException) as e:  # the client went or sent nonsense
                log.debug("api %s: connection dropped: %s", conn.address[0], e)
            except Exception:
                log.exception("api %s: the request failed", conn.address[0])
            conn.busy = False
            if self._stop.is_set() or conn.shut:
                keep = linger = False
            if linger:
                with contextlib.suppress(OSError):
                    conn.wfile.flush()
                    conn.sock.shutdown(socket.SHUT_WR)
                conn.draining = True
                conn.deadline = time.monotonic() + self.limits.linger
            elif keep:
                conn.deadline = time.monotonic() + self.limits.idle_timeout
            if keep or linger:
                self._back.put(conn)
                with contextlib.suppress(OSError):
                    self._wake_w.send(b"x")
            else:
                with self._lock:
                    self._open.discard(conn)
                conn.close()

    def _serve(self, conn: Connection) -> tuple[bool, bool]:
        """Requests on this connection while they keep coming: (keep it, linger on a refused body)."""
        while True:
            h = self.handler(conn, self.limits)
            h.handle_one_request()
            if h.close_connection:
                return False, h.body_unread
            if not conn.pending():
                return True, False
            conn.deadline = time.monotonic() + self.limits.read_timeout
