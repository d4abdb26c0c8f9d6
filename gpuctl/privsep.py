"""``gpuctl up``'s rules service and sink as an unprivileged user.

``up`` runs as root for its agent (/dev/kmsg, NVML); the rules service and the sink need no privilege.
Where up can (it is root with CAP_SETUID, CAP_SETGID and CAP_CHOWN, and the service user exists:
``--service-user``, by default ``gpuhealth``), each runs in a child process of its own as that user,
which up restarts when it dies; elsewhere both run inside up, as root, and one warning says so.

The design: up starts each child as it starts the agent, exec'd as root (``gpuctl serve rules|sink
--as-user U --ready-fd N``), so up is its parent and supervises it directly: readiness on a pipe, its exit
from the kernel, SIGTERM to stop it, PR_SET_PDEATHSIG to end it with up (set again after the drop, which
clears it). The child reads what root gives it (its NATS password, the rules file, a ClickHouse password),
imports what it will run from the interpreter's own library, and only then drops: setgroups([]), setgid,
setuid, checked in every thread. Importing first is what works where the service user may not read the
interpreter (pyenv under a 0700 /root here). chDB is the exception: it reads its capabilities once, when
imported, and starts its engine's threads then; with CAP_SYS_NICE it renices a query's threads to 19 and sets
them back to 0 after, which a thread without it may not do (the engine aborts). So the sink imports the
standard library's modules chDB needs as root, drops keeping CAP_SYS_NICE alone (PR_SET_KEEPCAPS, then capset,
in its only thread), and imports chDB after: every thread of the engine holds that capability and no other,
and a query costs ingestion what the scheduler gives a nice-19 thread (bench/query_isolation.py on 2 cores:
ingestion during the heaviest query 0.36 and 0.46 of its rate alone without the renice, 0.8 to 1.0 with it).
A fork server (import, drop, fork each child on request) would need a protocol to
relay requests and exits, and a process that never started a thread to fork from.

What the user gets: ``<data>/clickhouse``, given to it at every start (an older run's root-owned store
included), and the right to enter, not list, the data dir to reach it (0710 to its group, or 0750 where
the data dir's ``gpuhealth`` group is the user's own). The rest there is closed to it by its own modes, or
holds no secret (the agent's state, nats-server's log). No secret file: the child read its own as root.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import logging
import os
import pwd
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gpuhealth.errors import PrivilegeError
from gpuhealth.natsd import die_with_parent

log = logging.getLogger("gpuctl.privsep")

DEFAULT_USER = "gpuhealth"
CREATE_USER = "useradd --system --user-group --no-create-home --shell /usr/sbin/nologin gpuhealth"
# What dropping and giving the store take (linux/capability.h numbers): a unit's bounding set may leave them out.
NEEDED_CAPS = {"CAP_CHOWN": 0, "CAP_SETGID": 6, "CAP_SETUID": 7}
CAP_SYS_NICE = 23
_PR_SET_KEEPCAPS = 8
_CAP_VERSION_3 = 0x20080522  # capget/capset's 64-bit layout: two of _CapData


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class ServiceUser:
    name: str
    uid: int
    gid: int


def lookup(name: str) -> ServiceUser | None:
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        return None
    return ServiceUser(name, pw.pw_uid, pw.pw_gid)


def effective_caps(status: str) -> int:
    """The CapEff mask in a /proc/<pid>/status text."""
    line = next(x for x in status.splitlines() if x.startswith("CapEff:"))
    return int(line.split()[1], 16)


def why_not(name: str | None, *, caps: int, data_gid: int | None, needs_dir: bool) -> ServiceUser | str:
    """The user to drop to, or why up keeps the rules and the sink as root (with what would let it drop)."""
    wanted = name or DEFAULT_USER
    if wanted == "root":
        return "--service-user root"
    user = lookup(wanted)
    if user is None:
        return f"no user {wanted!r} (create it: {CREATE_USER})"
    if user.uid == 0:
        return f"{wanted!r} is root"
    missing = [c for c, bit in NEEDED_CAPS.items() if not caps >> bit & 1]
    if missing:
        return f"up may not drop to {wanted!r} without {', '.join(missing)} (the unit's CapabilityBoundingSet)"
    if needs_dir and data_gid is not None and data_gid != user.gid:
        return f"{wanted!r} is not in the data dir's group, so it cannot reach the embedded store"
    return user


def service_user(name: str | None, *, data_gid: int | None, needs_dir: bool) -> ServiceUser | None:
    """Who the rules and the sink run as, if not up's own user; says once when root keeps them."""
    if os.geteuid() != 0:
        return None  # up's own user, as unprivileged as they get
    found = why_not(name, caps=effective_caps(Path("/proc/self/status").read_text()), data_gid=data_gid,
                    needs_dir=needs_dir)  # fmt: skip
    if isinstance(found, str):
        log.warning("the rules service and the sink run as root, inside up: %s", found)
        return None
    return found


def give_store(data_dir: Path, store: Path, user: ServiceUser, data_gid: int | None) -> None:
    """The embedded store becomes the user's, and the data dir its to enter (not to list) on the way."""
    if data_gid is None:  # root's alone: the user's group gets to pass through it
        os.chown(data_dir, -1, user.gid)
        os.chmod(data_dir, 0o710)
    store.mkdir(exist_ok=True)
    os.chown(store, user.uid, user.gid)
    for top, dirs, files in os.walk(store):  # an older run's files were root's
        for name in dirs + files:
            os.lchown(os.path.join(top, name), user.uid, user.gid)


def drop(user: ServiceUser, preload: Iterable[str], then: Iterable[str] = ()) -> None:
    """Become ``user`` for good, having imported what it may not read (``preload``: modules run later).

    ``then``: modules imported once dropped, with CAP_SYS_NICE kept (and nothing else), by the only thread:
    chDB, which reads its capabilities when imported and starts its threads then, so that every thread of
    its engine may renice a query's threads to 19 and set them back (see the module docstring)."""
    then = tuple(then)
    for module in preload:
        importlib.import_module(module)
    keep = bool(then) and len(os.listdir("/proc/self/task")) == 1  # capabilities are per thread
    if not keep:
        _forgo(CAP_SYS_NICE)
    elif _libc.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0:
        raise PrivilegeError(f"cannot keep capabilities across the drop: {os.strerror(ctypes.get_errno())}")
    parent = os.getppid()
    os.setgroups([])
    os.setgid(user.gid)
    os.setuid(user.uid)
    if keep:
        _only(CAP_SYS_NICE)
    wrong = _still_privileged(user, CAP_SYS_NICE if keep else None)
    if wrong:
        raise PrivilegeError(f"could not become {user.name} ({user.uid}:{user.gid}): {wrong}")
    die_with_parent()  # the kernel forgot it when the credentials changed
    if os.getppid() != parent:
        raise PrivilegeError("gpuctl up exited while this stage started")
    for module in then:
        importlib.import_module(module)


def _only(cap: int) -> None:
    """This thread's capabilities become ``cap`` alone, effective and permitted (after a drop that kept them)."""
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    data[cap // 32].effective = data[cap // 32].permitted = 1 << cap % 32
    if _libc.capset(ctypes.byref(header), data) != 0 or _libc.prctl(_PR_SET_KEEPCAPS, 0, 0, 0, 0) != 0:
        raise PrivilegeError(f"cannot keep capability {cap} alone: {os.strerror(ctypes.get_errno())}")


def _forgo(cap: int) -> None:
    """Take ``cap`` out of this thread's effective set (lowering needs no privilege), before any other thread."""
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    if _libc.capget(ctypes.byref(header), data) != 0 or not _cleared(header, data, cap):
        raise PrivilegeError(f"cannot give up capability {cap}: {os.strerror(ctypes.get_errno())}")


def _cleared(header: _CapHeader, data: ctypes.Array[_CapData], cap: int) -> bool:
    data[cap // 32].effective &= ~(1 << cap % 32)
    return bool(_libc.capset(ctypes.byref(header), data) == 0)


def _still_privileged(user: ServiceUser, kept: int | None = None) -> str:
    if os.getresuid() != (user.uid,) * 3 or os.getresgid() != (user.gid,) * 3 or os.getgroups():
        return f"uids {os.getresuid()}, gids {os.getresgid()}, groups {os.getgroups()}"
    # chDB's engine threads: setuid reaches them through glibc, and this says it did.
    want = {"Uid": f"{user.uid}\t" * 4, "Gid": f"{user.gid}\t" * 4, "Groups": ""}
    allowed = 0 if kept is None else 1 << kept
    for task in Path("/proc/self/task").iterdir():
        fields = dict(line.split(":", 1) for line in (task / "status").read_text().splitlines())
        if any(fields[k].strip() != v.strip() for k, v in want.items()):
            return f"thread {task.name} kept other credentials"
        if int(fields["CapPrm"], 16) & ~allowed:
            return f"thread {task.name} kept capabilities {fields['CapPrm'].strip()}"
    return ""


class Ready:
    """A child's side of ``--ready-fd``: one JSON line, once: ready, or why it could not start."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        self.asked = fd is not None  # by up: a child of its own

    def say(self, **what: object) -> None:
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(what) + "\n")

    @contextlib.contextmanager
    def or_why(self) -> Iterator[None]:
        """Whatever stops the child before it is ready is the one line up fails with."""
        try:
            yield
        except Exception as e:
            self.say(error=str(e) or repr(e))
            raise
