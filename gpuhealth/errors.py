"""Every error a gpuhealth user can see, in one tree, each with the exit code gpuctl gives it.

    GpuhealthError               70  gpuhealth itself failed (a stage died, an unexpected error)
    ├── ConfigError              64  a flag, file or environment value is wrong (and usage errors)
    ├── NotFoundError            68  a node, GPU, component or check named that nothing has
    ├── NotRunningError          69  no running gpuhealth answers
    ├── PermissionDeniedError    77  this user may not read the stack's data dir, or NATS refused the credentials
    │   (also a PermissionError)
    ├── EmbeddedServerError      71  the embedded nats-server could not start
    ├── PrivilegeError           77  a stage of gpuctl up could not become its service user
    ├── QueryError               65  the sink refused or failed a read-only query
    │   └── QueryRefused             the query path's gate refused it before it ran (not a read of gpuhealth's tables)
    ├── SchedulerError           69  the responder's scheduler (Slurm, a command hook) refused or failed an action
    └── SourceError              71  a producer cannot open its source
        (also an OSError, so callers that handle OS errors handle it)

0, 1, 2 and 3 are verdicts (Healthy, Degraded, Unhealthy, Unknown: what Nagios, NHC and Slurm's
health checks read), so no error may exit with one of them: the codes are sysexits.h's.
``gpuctl`` prints one line for any of them; ``--debug`` shows the traceback.
"""

from __future__ import annotations

from typing import ClassVar


class GpuhealthError(Exception):
    """Base of every error gpuhealth raises on purpose."""

    exit_code: ClassVar[int] = 70  # EX_SOFTWARE


class ConfigError(GpuhealthError, ValueError):
    exit_code = 64  # EX_USAGE


class NotFoundError(GpuhealthError, LookupError):
    exit_code = 68  # EX_NOHOST: "host name unknown", and its GPUs, components and checks


class NotRunningError(GpuhealthError):
    exit_code = 69  # EX_UNAVAILABLE


class PermissionDeniedError(GpuhealthError, PermissionError):
    exit_code = 77  # EX_NOPERM


class EmbeddedServerError(GpuhealthError):
    exit_code = 71  # EX_OSERR


class PrivilegeError(GpuhealthError):
    exit_code = 77  # EX_NOPERM


class QueryError(GpuhealthError):
    exit_code = 65  # EX_DATAERR


class QueryRefused(QueryError):
    pass


class SchedulerError(GpuhealthError):
    exit_code = 69  # EX_UNAVAILABLE


class SourceError(GpuhealthError, OSError):
    exit_code = 71  # EX_OSERR
