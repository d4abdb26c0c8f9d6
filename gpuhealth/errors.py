"""Every error a gpuhealth user can see, in one tree.

    GpuhealthError
    ├── ConfigError              a flag, file or environment value is wrong
    ├── NotRunningError          no running gpuhealth answers (gpuctl exits 4)
    ├── PermissionDeniedError    this user may not read the running stack's data dir
    │   (also a PermissionError)
    ├── EmbeddedServerError      the embedded nats-server could not start
    ├── PrivilegeError           a stage of gpuctl up could not become its service user
    ├── QueryError               the sink refused or failed a read-only query
    │   └── QueryRefused         the query path's gate refused it before it ran (not a read of gpuhealth's tables)
    └── SourceError              a producer cannot open its source
        (also an OSError, so callers that handle OS errors handle it)

``gpuctl`` prints one line for any of them and exits non-zero; ``--debug``
shows the traceback.
"""

from __future__ import annotations


class GpuhealthError(Exception):
    """Base of every error gpuhealth raises on purpose."""


class ConfigError(GpuhealthError, ValueError):
    pass


class NotRunningError(GpuhealthError):
    pass


class PermissionDeniedError(GpuhealthError, PermissionError):
    pass


class EmbeddedServerError(GpuhealthError):
    pass


class PrivilegeError(GpuhealthError):
    pass


class QueryError(GpuhealthError):
    pass


class QueryRefused(QueryError):
    pass


class SourceError(GpuhealthError, OSError):
    pass
