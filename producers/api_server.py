"""The local API's listener: a selector thread, a fixed pool of workers, and a deadline on every connection.

- The selector thread accepts connections and keeps them until a whole request head has arrived (new, kept
  alive, trickling a head in, or being drained after a refusal); the workers handle requests whose head is
  here. An idle, kept-alive or slow connection holds no thread, and 200 concurrent clients wait in a queue,
  not on a backlog of 5.
- A connection idle for ``idle_timeout`` is closed; a request's head must arrive within ``read_timeout`` of
  its first byte, its body within ``read_timeout`` of its head, and its answer go within ``write_timeout``,
  else the connection is closed (or its socket shut down under its worker).
- At most ``max_connections`` are open; at the cap a new one closes the connection idle the longest, and
  only when all are at work do new ones wait in the kernel's backlog (``backlog``).

- Over TLS (``tls``, the default of the agent, as GPUd has it) the handshake is the selector's too, on a
  non-blocking socket, within the new connection's ``idle_timeout``: a client that connects and stalls its
  handshake holds no thread either.

What one request may hold (its head, body and JSON) is ``api_http``'s.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import queue
import selectors
import socket
import ssl
import threading
import time

from producers.api_http import Connection, GuardedHandler, Limits, throttled_log

log = logging.getLogger("gpuhealth.api")


class Server:
    """A listening socket, a selector thread and a pool of workers running ``handler`` per request."""

    def __init__(
        self, host: str, port: int, handler: type[GuardedHandler], limits: Limits, tls: ssl.SSLContext | None = None
    ) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.create_server((host, port), family=family, backlog=limits.backlog)
        self.sock.setblocking(False)
        self.address: tuple[str, int] = self.sock.getsockname()[:2]
        self.handler, self.limits, self.tls = handler, limits, tls
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
        self._scratch = bytearray(65536)

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
        deadline = time.monotonic() + 2.0  # the agent's shutdown waits on this: a stuck worker is left behind
        for t in self._threads:
            if t.is_alive():
                t.join(max(0.0, deadline - time.monotonic()))
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
            try:
                self._select_once()
            except Exception:  # a bug here would silence the API: log it and go on
                log.exception("api: the selector failed")
                time.sleep(0.1)

    def _select_once(self) -> None:
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
            if conn.sock.fileno() < 0:  # closed meanwhile (the server is closing)
                continue
            conn.sock.setblocking(False)
            if not conn.draining:
                self._take_pending(conn)
            if not conn.draining and conn.head_arrived(self.limits.max_head):
                self._dispatch(conn)  # a pipelined request, already read
            else:
                self._selector.register(conn.sock, selectors.EVENT_READ, conn)
        self._sweep()

    def _accept(self) -> None:
        for _ in range(64):  # a burst, then the other connections get their turn
            if not self._make_room():
                self._set_accepting(False)  # every connection is at work: new ones wait in the backlog
                return
            try:
                sock, address = self.sock.accept()
            except BlockingIOError:
                return
            except OSError as e:  # out of descriptors: stop accepting until some close
                throttled_log(logging.WARNING, "api: accept failed: %s", e)
                self._set_accepting(False)
                return
            sock.setblocking(False)
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
            conn = Connection(sock, address, handshaking=self.tls is not None)
            conn.deadline = time.monotonic() + self.limits.idle_timeout
            with self._lock:
                self._open.add(conn)
            self._selector.register(sock, selectors.EVENT_READ, conn)

    def _make_room(self) -> bool:
        """Below the cap, or made so by closing the connection that waited longest for nothing: a process
        holding every connection open must not lock the others out for good (they evict its connections)."""
        with self._lock:
            if len(self._open) < self.limits.max_connections:
                return True
            waiting = [c for c in self._open if not c.busy]
        if not waiting:
            return False
        self._forget(min(waiting, key=lambda c: c.deadline))
        return True

    def _readable(self, conn: Connection) -> None:
        if conn.draining:
            try:
                n = conn.sock.recv_into(self._scratch)
            except BlockingIOError:
                return
            except OSError:
                n = 0
            conn.drained += n
            if n == 0 or conn.drained > self.limits.linger_bytes:
                self._forget(conn)
            return
        if conn.handshaking and not self._handshake(conn):
            return
        early = conn.raw.early
        while True:  # the head is read here, however slowly it comes: a worker only takes whole heads
            try:
                n = conn.sock.recv_into(self._scratch, max(1, self.limits.max_head - len(early)))
            except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                return
            except OSError:
                n = 0
            if n == 0:  # closed, or reset, before a request
                self._forget(conn)
                return
            if not early:  # the head's clock starts at its first byte
                conn.deadline = time.monotonic() + self.limits.read_timeout
            early += self._scratch[:n]
            if conn.head_arrived(self.limits.max_head):
                self._selector.unregister(conn.sock)
                self._dispatch(conn)
                return
            if not _pending(conn.sock):  # TLS may hold decrypted bytes the selector cannot see: read those now
                return

    def _handshake(self, conn: Connection) -> bool:
        """One step of a TLS handshake; True once it is done."""
        assert isinstance(conn.sock, ssl.SSLSocket)
        try:
            conn.sock.do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return False
        except (OSError, ValueError) as e:  # plain HTTP on the HTTPS port, a scanner, a client that went
            log.debug("api %s: TLS handshake failed: %s", conn.address[0], e)
            self._forget(conn)
            return False
        conn.handshaking = False
        return True

    @staticmethod
    def _take_pending(conn: Connection) -> None:
        """What TLS decrypted but no one read yet (a pipelined request), into the head's buffer."""
        with contextlib.suppress(OSError):
            while n := _pending(conn.sock):
                conn.raw.early += conn.sock.recv(n)

    def _dispatch(self, conn: Connection) -> None:
        conn.sock.settimeout(self.limits.read_timeout)  # each read or write; the deadline bounds the whole
        conn.deadline = float("inf")  # waiting for a worker is not the client's slowness: its clock starts there
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
            conn.deadline = time.monotonic() + self.limits.read_timeout
            keep, linger = False, False
            try:
                keep, linger = self._serve(conn)
            except (OSError, ValueError, http.client.HTTPException) as e:  # the client went or sent nonsense
                log.debug("api %s: connection dropped: %s", conn.address[0], e)
            except Exception:
                log.exception("api %s: the request failed", conn.address[0])
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
            conn.busy = False  # after its new deadline: the sweep must not see the old one on an idle connection
            if keep or linger:
                self._back.put(conn)
                with contextlib.suppress(OSError):
                    self._wake_w.send(b"x")
            else:
                with self._lock:
                    self._open.discard(conn)
                conn.close()

    def _serve(self, conn: Connection) -> tuple[bool, bool]:
        """One request: (keep the connection for the next, linger because a refused body was not read)."""
        h = self.handler(conn, self.limits)
        h.handle_one_request()
        if h.close_connection:
            return False, h.body_unread
        conn.unread()  # a pipelined next request goes back to the selector, which waits for its whole head
        return True, False


def _pending(sock: socket.socket) -> int:
    return sock.pending() if isinstance(sock, ssl.SSLSocket) else 0
