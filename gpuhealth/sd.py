"""Running under systemd: readiness, the watchdog, and logs to the journal; nothing outside it.

``notify`` goes through systemd-python's ``systemd.daemon.notify`` where that is
installed (the ``journald`` extra) and otherwise writes the same datagram to
``$NOTIFY_SOCKET`` itself, so a base install still works as ``Type=notify``.
Without ``$NOTIFY_SOCKET`` (not under systemd) every call is a no-op.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys


def notify(state: str) -> bool:
    """Send e.g. "READY=1" or "WATCHDOG=1"; True when systemd was there to hear it."""
    path = os.environ.get("NOTIFY_SOCKET")
    if not path:
        return False
    try:
        from systemd import daemon

        return bool(daemon.notify(state))
    except ImportError:
        pass
    address = "\0" + path[1:] if path.startswith("@") else path  # an abstract socket
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
        s.connect(address)
        s.sendall(state.encode())
        return True
    return False


def watchdog_interval() -> float | None:
    """Half of WatchdogSec (systemd passes it as $WATCHDOG_USEC), or None when there is no watchdog."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return int(usec) / 2_000_000
    except ValueError:
        return None


async def watchdog(stop: asyncio.Event) -> None:
    """Ping the watchdog while the event loop runs: a loop that hangs stops pinging and is restarted."""
    every = watchdog_interval()
    if every is None:
        return
    while not stop.is_set():
        notify("WATCHDOG=1")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)


def ready(status: str = "") -> None:
    notify("READY=1" + (f"\nSTATUS={status}" if status else ""))


def stopping() -> None:
    notify("STOPPING=1")


def log_handler() -> logging.Handler:
    """The journal's own handler under systemd (structured fields, priorities), stderr otherwise."""
    if os.environ.get("JOURNAL_STREAM") or os.environ.get("INVOCATION_ID"):
        try:
            from systemd.journal import JournalHandler

            return JournalHandler(SYSLOG_IDENTIFIER="gpuhealth")  # type: ignore[no-any-return]
        except ImportError:
            pass
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    return handler
