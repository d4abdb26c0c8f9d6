"""Where the sink writes: a ClickHouse URL, parsed once, with its credentials kept out of logs.

    chdb:///var/lib/gpuhealth/clickhouse           the engine in process (one node)
    https://ingest@ch.example.net:8443/gpuhealth   a server or cluster over HTTP(S)

The password comes from, in order: the URL (discouraged: it shows in process
lists), ``$GPUHEALTH_CLICKHOUSE_PASSWORD``, or a file (``--clickhouse-password-
file`` or ``$GPUHEALTH_CLICKHOUSE_PASSWORD_FILE``, first line). A CA bundle for
a private PKI comes from ``$GPUHEALTH_CLICKHOUSE_CA``. The database is the
URL's path (default ``gpuhealth``); every table is qualified with it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from gpuhealth.errors import ConfigError

DEFAULT_DATABASE = "gpuhealth"
_DATABASE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# The in-process engine's own settings, given when the first handle opens it. ClickHouse's memory worker
# re-reads the process's memory 10 times a second to correct its tracker: at rest that was a sixth of the
# whole stack's CPU (1.7 millicores), and once a second is ample for a sink whose queries have their own limits.
CHDB_ENGINE_OPTIONS = {"memory_worker_period_ms": "1000"}


@dataclass(frozen=True)
class Target:
    kind: str  # chdb | http
    database: str
    path: str = ""  # chdb
    host: str = ""
    port: int = 0
    secure: bool = False
    username: str = "default"
    password: str = ""
    ca_cert: str | None = None

    def __repr__(self) -> str:  # a Target in a traceback or log never shows the password
        return f"Target({self.redacted()})"

    def redacted(self) -> str:
        if self.kind == "chdb":
            return f"chdb://{self.path} (database {self.database})"
        scheme = "https" if self.secure else "http"
        secret = ":***" if self.password else ""
        return f"{scheme}://{self.username}{secret}@{self.host}:{self.port}/{self.database}"

    def client_kwargs(self) -> dict[str, Any]:
        """What clickhouse_connect.get_client takes for this target."""
        if self.kind == "chdb":
            return {"dsn": f"chdb://{self.path}", "chdb_options": CHDB_ENGINE_OPTIONS}
        kwargs: dict[str, Any] = {
            "host": self.host, "port": self.port, "username": self.username, "password": self.password,
            "secure": self.secure, "connect_timeout": 5, "send_receive_timeout": 60,
        }  # fmt: skip
        if self.ca_cert:
            kwargs["ca_cert"] = self.ca_cert
        return kwargs


def parse(url: str, *, env: Mapping[str, str] | None = None, password_file: Path | None = None,
          database: str | None = None) -> Target:  # fmt: skip
    env = os.environ if env is None else env
    parts = urlsplit(url)
    if parts.scheme == "chdb":
        path = (parts.netloc + parts.path) or ""
        if not path.startswith("/"):
            raise ConfigError(f"chdb URL needs an absolute path: chdb:///var/lib/gpuhealth/clickhouse, not {url!r}")
        return Target(kind="chdb", path=path, database=_database(database or DEFAULT_DATABASE))
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f"unsupported ClickHouse URL {_scrub(url)!r}: use chdb:///path, http:// or https://")
    if not parts.hostname:
        raise ConfigError(f"ClickHouse URL {_scrub(url)!r} has no host")
    try:
        port = parts.port or (8443 if parts.scheme == "https" else 8123)
    except ValueError:
        raise ConfigError(f"ClickHouse URL {_scrub(url)!r} has a bad port") from None
    password = unquote(parts.password or "") or env.get("GPUHEALTH_CLICKHOUSE_PASSWORD", "")
    file = password_file or (Path(env["GPUHEALTH_CLICKHOUSE_PASSWORD_FILE"])
                             if env.get("GPUHEALTH_CLICKHOUSE_PASSWORD_FILE") else None)  # fmt: skip
    if not password and file is not None:
        try:
            password = file.read_text().splitlines()[0].strip() if file.read_text().strip() else ""
        except OSError as e:
            raise ConfigError(f"cannot read the ClickHouse password file {file}: {e.strerror}") from None
    path_db = parts.path.strip("/")
    return Target(
        kind="http", database=_database(database or path_db or DEFAULT_DATABASE), host=parts.hostname,
        port=port, secure=parts.scheme == "https", username=unquote(parts.username or "default"),
        password=password, ca_cert=env.get("GPUHEALTH_CLICKHOUSE_CA") or None,
    )  # fmt: skip


def _database(name: str) -> str:
    if not _DATABASE.match(name):
        raise ConfigError(f"bad ClickHouse database name {name!r}: letters, digits and '_'")
    return name


def _scrub(url: str) -> str:
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)
