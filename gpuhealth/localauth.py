"""``gpuctl up``'s own NATS identities, and who on the machine may read what in its data dir.

The embedded nats-server always authenticates. Its identities are a fleet's
(gpuhealth/natsconf.py: ``agent-<node>`` for this node, ``rules``, ``sink``,
``operator``, each with the same permissions) plus ``simulator`` for
``gpuctl simulate``. Each secret is a random password in
``<data-dir>/secrets/<user>.password``, written once and kept across restarts,
as ``gpuctl nats-config`` keeps a fleet's: a client that outlives a restart
(``gpuctl watch``) reconnects, and rotating is deleting ``secrets/``. The
server's config holds bcrypt hashes only.

Readable only by whoever may operate gpuhealth: the data dir and ``secrets/``
are 0700, or 0750 with group ``gpuhealth`` where that group exists; the
operator's secret and ``run.json`` (no secret in it) are 0600, or 0640 to
that group; every other secret is 0600 to the user ``up`` runs as.
"""

from __future__ import annotations

import grp
import logging
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from gpuhealth import natsconf
from gpuhealth.errors import ConfigError, PermissionDeniedError

log = logging.getLogger("gpuhealth.localauth")

GROUP = "gpuhealth"
SECRETS = "secrets"
OPERATOR = "operator"
# The passwords are 192 random bits: a costlier hash protects nothing more, and the server
# checks one on every connect (every gpuctl command). 4 is bcrypt's least.
BCRYPT_ROUNDS = 4


def operator_gid(group: str = GROUP) -> int | None:
    """The group whose members may operate root's gpuhealth, if the machine has one (a user's own is theirs)."""
    if os.geteuid() != 0:
        return None
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        return None


def restrict(path: Path, gid: int | None, *, group_reads: bool) -> None:
    """Owner only, or owner and ``gid`` reading: 0700/0750 for a directory, 0600/0640 for a file."""
    directory = path.is_dir()
    if group_reads and gid is not None:
        os.chown(path, -1, gid)
        os.chmod(path, 0o750 if directory else 0o640)
    else:
        os.chmod(path, 0o700 if directory else 0o600)


def prepare_data_dir(data_dir: Path, gid: int | None) -> int | None:
    """Create the data dir, or tighten an existing one: nothing in it is for other users.

    Returns the group to share with: ``gid``, or None where this process may not give files to it
    (no CAP_CHOWN, as under the systemd unit): then root alone operates, and the log says why."""
    data_dir.mkdir(parents=True, exist_ok=True)
    mode = data_dir.stat().st_mode
    if mode & (stat.S_ISVTX | stat.S_IWOTH):  # /tmp, say: chmod-ing it would lock everyone else out
        shown = stat.filemode(mode)
        raise ConfigError(f"{data_dir} is shared by every user ({shown}): give gpuhealth its own with --data-dir")
    try:
        restrict(data_dir, gid, group_reads=True)
    except PermissionError as e:
        log.warning("the %s group cannot be given %s (%s): only root may operate gpuhealth", GROUP, data_dir, e)
        gid = None
        restrict(data_dir, gid, group_reads=True)
    return gid


def password_path(data_dir: Path, user: str) -> Path:
    return data_dir / SECRETS / f"{user}.password"


def keep_secret(path: Path) -> str:
    """The secret in ``path``, made (random, 0600, never overwritten) if there is none yet."""
    if path.exists():
        return path.read_text().strip()
    value = secrets.token_urlsafe(24)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")
    return value


def identities(data_dir: Path, node: str, gid: int | None) -> list[natsconf.Identity]:
    """This node's identities with their kept (or new) secrets; only the operator's is the group's to read."""
    directory = data_dir / SECRETS
    directory.mkdir(exist_ok=True)
    restrict(directory, gid, group_reads=True)

    def password(user: str) -> str:
        path = password_path(data_dir, user)
        value = keep_secret(path)
        restrict(path, gid, group_reads=user == OPERATOR)
        return value

    ids = natsconf.identities([node], password)
    simulator = natsconf.SIMULATOR
    return [*ids, natsconf.Identity(simulator, password(simulator), natsconf.simulator_permissions([node]))]


def server_auth(ids: list[natsconf.Identity]) -> str:
    return natsconf.auth_conf(ids, rounds=BCRYPT_ROUNDS)


def credentials(data_dir: Path, user: str = OPERATOR) -> dict[str, str]:
    """What a client of the local stack connects with (nats-py's ``user`` and ``password``)."""
    path = password_path(data_dir, user)
    try:
        return {"user": user, "password": path.read_text().strip()}
    except PermissionError:
        raise PermissionDeniedError(
            f"permission denied: {path} is readable only by root or the {GROUP} group"
        ) from None
    except OSError as e:
        raise ConfigError(f"cannot read the {user} identity's secret {path}: {e.strerror or e}") from None


def child_env(data_dir: Path, user: str, env: Mapping[str, str]) -> dict[str, str]:
    """A child's environment with this identity: a password file, never the password on argv or in env."""
    own = {k: v for k, v in env.items() if not k.startswith("GPUHEALTH_NATS_")}  # a fleet's settings do not apply
    return {**own, "GPUHEALTH_NATS_USER": user, "GPUHEALTH_NATS_PASSWORD_FILE": str(password_path(data_dir, user))}
