"""How GPUd's server writes an answer (pkg/server, gin), so its clients' readers (client/v1 Read*) take ours.

- A read's format follows the request's ``Content-Type`` header (GPUd reads that, not ``Accept``): none or
  ``application/json`` is compact JSON, or indented with the header ``json-indent: true``; ``application/yaml`` is
  YAML (Go's sigs.k8s.io/yaml: keys sorted, sent as ``text/plain; charset=utf-8``); anything else is 400. Writes
  answer JSON.
- ``Accept-Encoding: gzip`` compresses answers under ``/v1/`` (gin's gzip middleware sits on that group only).
- Errors are ``{"code", "message"}``.

PyYAML is a dependency already (custom check files); it is imported on the first YAML request only, so an agent
no one asks for YAML never holds it.
"""

from __future__ import annotations

import gzip
import json
from email.message import Message
from typing import Any

JSON, YAML = "application/json", "application/yaml"
JSON_TYPE, YAML_TYPE = "application/json; charset=utf-8", "text/plain; charset=utf-8"


class BadContentType(ValueError):
    """A request's Content-Type GPUd does not answer in."""


def wants(headers: Message) -> str:
    """The answer's format for a read: "json", "indent" or "yaml"; BadContentType for another media type (its
    parameters, such as ``charset``, are ignored). GPUd's writes answer JSON whatever the request says."""
    media = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if media == YAML:
        return "yaml"
    if media in ("", JSON):
        return "indent" if headers.get("json-indent") == "true" else "json"
    raise BadContentType(media)


def render(body: Any, fmt: str) -> tuple[bytes, str]:
    """(bytes, Content-Type) of a JSON-like body in the format ``wants`` chose."""
    if fmt == "yaml":
        return to_yaml(body).encode(), YAML_TYPE
    if fmt == "indent":  # gin's IndentedJSON: four spaces
        return json.dumps(body, indent=4).encode(), JSON_TYPE
    return json.dumps(body, separators=(",", ":")).encode(), JSON_TYPE  # as Go's encoding/json writes it


def to_yaml(body: Any) -> str:
    import yaml  # only for the requests that ask for YAML (see the docstring)

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text: str = yaml.dump(body, Dumper=dumper, sort_keys=True, default_flow_style=False, allow_unicode=True)
    return text


def gzipped(headers: Message, path: str) -> bool:
    """Whether the answer is gzip-compressed: asked for, and under /v1/ as GPUd's middleware is."""
    if not path.startswith("/v1/"):
        return False
    codings = (headers.get("Accept-Encoding") or "").lower()
    return any(c.split(";")[0].strip() == "gzip" for c in codings.split(","))


def compress(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)  # level 6: Go's DefaultCompression


def error(status: int, message: str) -> dict[str, Any]:
    """GPUd's error body."""
    return {"code": status, "message": message}
