"""The local API's write credential: a random token in a file only the agent's user can read.

Reads stay open, as GPUd has them; a write (set-healthy, inject-fault) carries ``Authorization: Bearer
<token>``. The file lives in the agent's data dir, mode 0600, made at the first start and kept after: root
(or the agent's user) reads it, an unprivileged local process cannot, so it cannot clear a verdict.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import secrets
import stat
from email.message import Message
from pathlib import Path

log = logging.getLogger("gpuhealth.api")

TOKEN_FILE = "api-token"  # in the agent's state dir: <data-dir>/agent/api-token
_MIN_LENGTH = 32


def token_path(data_dir: Path) -> Path:
    return data_dir / "agent" / TOKEN_FILE


def load_or_create_token(path: Path) -> str:
    """The token in ``path``; a new one when it is missing, unreadable as ours, or was readable by others."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return _write_new(path, replace=False)
    except OSError as e:  # a symbolic link (ELOOP) or something else we will not trust
        log.warning("replacing the API token file %s: %s", path, e)
        return _write_new(path, replace=True)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        token = f.read(1024).decode("ascii", "replace").strip()
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        # Someone else's file, or one others could read: the old token may be known, so it is not kept.
        log.warning("replacing the API token file %s: not a private file of ours (mode %o)", path, st.st_mode)
        return _write_new(path, replace=True)
    if len(token) < _MIN_LENGTH or not token.isascii() or not token.isprintable():
        log.warning("replacing the API token file %s: it holds no usable token", path)
        return _write_new(path, replace=True)
    return token


def _write_new(path: Path, *, replace: bool) -> str:
    token = secrets.token_urlsafe(32)  # 256 bits
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)  # private from its first byte
    try:
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # fails if another start made one meanwhile: then that one is the token
            except FileExistsError:
                return load_or_create_token(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    log.info("made the local API's token: %s (mode 0600; writes send 'Authorization: Bearer <token>')", path)
    return token


def check_bearer(headers: Message, token: str) -> int:
    """0 when the request carries the token; else the status that refuses it: 401 with no credential, 403 with
    a wrong one. Compared in constant time."""
    given = headers.get("Authorization")
    if given is None:
        return 401
    scheme, _, value = given.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return 401
    ok = hmac.compare_digest(value.strip().encode("latin-1", "replace"), token.encode("ascii"))
    return 0 if ok else 403
