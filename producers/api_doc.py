"""The agent API's OpenAPI document: what each endpoint takes and answers, exactly (the tests fuzz the server
against it with schemathesis, so what it accepts and what this says must agree).

Reads need nothing, as GPUd has them. Writes need the agent's token, a file only its user can read
(``<data-dir>/agent/api-token``, mode 0600), sent as ``Authorization: Bearer <token>``."""

from __future__ import annotations

import re
from typing import Any

from gpuhealth.events import KERNEL_PRIORITIES
from producers.gpud_metrics import DURATION_PATTERN

# GPUd's kernel message priorities (pkg/kmsg/writer): KERN_ERR or kern.err; KERN_DEFAULT is the kernel's
# default message level, warning.
INJECT_PRIORITIES = {**KERNEL_PRIORITIES, **{n.lower().replace("_", "."): p for n, p in KERNEL_PRIORITIES.items()},
                     "kern.warn": 4, "KERN_DEFAULT": 4, "kern.default": 4}  # fmt: skip
COMPONENT_LIST = re.compile(r"^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$")


def _schema(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or list(props)}


_S, _ARR = {"type": "string"}, {"type": "array", "items": {"type": "string"}}
# RFC 3339 as GPUd sends it, unix seconds, or empty for the default (the last hour, until now)
_TIME = {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "pattern": "^[0-9]{1,10}$"},
                   {"type": "string", "maxLength": 0}]}  # fmt: skip
_STATE = _schema({"time": _S, "component": _S, "name": _S, "health": _S, "reason": _S,
                  "suggested_actions": _schema({"description": _S, "repair_actions": _ARR}),
                  "extra_info": _schema({"data": _S, "encoding": _S}),  # GPUd's detail components: JSON in data
                  "component_type": _S, "run_mode": _S},  # a custom check's: custom-plugin, auto|manual
                 ["time", "component", "name", "health", "reason", "suggested_actions"])  # fmt: skip
_EVENT = _schema({"component": _S, "time": _S, "name": _S, "type": _S, "message": _S})
_INJECTION = {"anyOf": [
    _schema({"kernel_message": _schema({
        "priority": {"anyOf": [{"enum": list(INJECT_PRIORITIES)}, {"type": "integer", "minimum": 0, "maximum": 7}]},
        "message": {"type": "string", "minLength": 1, "maxLength": 4096}}, ["message"])}),
    _schema({"xid": _schema({"id": {"type": "integer", "minimum": 1, "maximum": 65535}})}),
]}  # fmt: skip
_ERROR = {"description": "error", "content": {"application/json": {"schema": _schema({"code": {"type": "integer"},
                                                                                     "message": _S})}}}  # fmt: skip
# GPUd's api/v1 MachineInfo: what its clients require (Flow: gpuInfo.gpus, a list of objects), and our node.
_GPU = _schema({"uuid": _S, "busID": _S, "sn": _S, "index": {"type": "integer"}, "name": _S}, ["busID", "index"])
_MACHINE_INFO = _schema({"gpudVersion": _S, "machineID": _S, "bootID": _S, "hostname": _S, "node": _S,
                         "cluster": _S, "gpuInfo": _schema({"product": _S, "gpus": {"type": "array", "items": _GPU}},
                                                           ["gpus"])},
                        ["gpudVersion", "machineID", "bootID", "node", "cluster", "gpuInfo"])  # fmt: skip
OWN_MACHINE_INFO = "/gpuhealth/v1/machine-info"  # gpuhealth's own inventory view, beside GPUd's
OWN_METRICS = "/gpuhealth/v1/metrics"  # the latest batches in gpuhealth's own names, beside GPUd's history


def _query(name: str, schema: dict[str, Any], description: str = "", required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": schema, "description": description}


_COMPONENTS = [_query("components", _S, "comma-separated component names; one this agent does not know is 404")]
_WINDOW = [_query("startTime", _TIME), _query("endTime", _TIME)]
_SINCE = [_query("since", {"type": "string", "pattern": DURATION_PATTERN},
                 "a Go duration back from now (30m, 1h30m); 30m unless given")]  # fmt: skip
_NAMED = {"type": "string", "minLength": 1}
_NAME = _query("componentName", _NAMED, "a component's name; one this agent does not know is 404")


def _ARRAY_OF(items: dict[str, Any]) -> dict[str, Any]:  # a type, beside _S and _ARR
    return {"type": "array", "items": items}


_NULLABLE_ARRAY = {"type": "array", "nullable": True}
_STATES = _ARRAY_OF(_schema({"component": _S, "states": _ARRAY_OF(_STATE)}))
_METRIC = _schema(
    {"unix_seconds": {"type": "integer"}, "name": _S, "labels": {"type": "object"}, "value": {"type": "number"}},
    ["unix_seconds", "name", "value"],
)  # GPUd's labels are omitempty
_INFO = _ARRAY_OF(_schema({"component": _S, "startTime": _S, "endTime": _S,
                           "info": _schema({"states": _NULLABLE_ARRAY, "events": _NULLABLE_ARRAY,
                                            "metrics": _NULLABLE_ARRAY})}))  # fmt: skip


def _ok(schema: dict[str, Any]) -> dict[str, Any]:
    return {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}


def _error(description: str) -> dict[str, Any]:
    return _ERROR | {"description": description}


_NOT_FOUND = {"404": _error("a component this agent does not know")}
_BAD = {"400": _ERROR}
# What every write may also answer: no token, a wrong one, a body over 64 KiB.
_WRITE_REFUSALS = {
    "401": _error("no token: send Authorization: Bearer <token> (the answer carries WWW-Authenticate: Bearer)"),
    "403": _error("a wrong token"),
    "413": _error("a body over 64 KiB"),
}
_TOKEN_NEEDED: list[dict[str, list[str]]] = [{"agentToken": []}]


def _read(schema: dict[str, Any], parameters: list[dict[str, Any]] | None = None, **more: Any) -> dict[str, Any]:
    return {"get": {"parameters": parameters or [], "responses": _ok(schema) | more.pop("responses", {})} | more}


def _guarded(method: str, schema: dict[str, Any], parameters: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    """An operation that needs the agent's token."""
    responses = _ok(schema) | _BAD | _NOT_FOUND | _WRITE_REFUSALS
    return {method: {"security": _TOKEN_NEEDED, "parameters": parameters, "responses": responses} | more}


_SET_HEALTHY = _schema({"code": {"type": "integer"}, "message": _S, "successful": _ARR, "ok": {"type": "boolean"},
                        "components": _ARR, "events": {"type": "integer"}},
                       ["code", "message", "ok", "components", "events"])  # fmt: skip
_LIST_PARAM = {"type": "string", "pattern": f"({COMPONENT_LIST.pattern})|^$"}

OPENAPI: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {
        "title": "gpuhealth agent API (GPUd-compatible)",
        "version": "v1",
        "description": "Reads are open. Writes (POST, DELETE) and the trigger endpoints need the agent's token, "
        "readable only by the agent's user: Authorization: Bearer $(cat <data-dir>/agent/api-token), by default "
        "/var/lib/gpuhealth/agent/api-token. A request body is at most 64 KiB and its JSON at most 32 levels "
        "deep; a connection idle for 5 s is closed, and a request must arrive within 5 s. As GPUd: the request's "
        "Content-Type application/yaml answers YAML, the header json-indent: true indented JSON, and "
        "Accept-Encoding: gzip compresses the answers under /v1/.",
    },
    "components": {
        "securitySchemes": {
            "agentToken": {
                "type": "http",
                "scheme": "bearer",
                "description": "the token in <data-dir>/agent/api-token (mode 0600, made at the agent's first start)",
            }
        }
    },
    "paths": {
        "/healthz": _read(_schema({"status": _S, "version": _S})),
        "/machine-info": _read(_MACHINE_INFO),
        OWN_MACHINE_INFO: _read(_schema({"node": _S, "cluster": _S, "machineID": _S, "bootID": _S,
                                         "gpuCount": {"type": "integer"}}, ["node", "cluster", "gpuCount"])),
        OWN_METRICS: _read(_ARRAY_OF(_schema({"component": _S, "metrics": {"type": "array"}}))),
        "/v1/components": _read(_ARR)
        | _guarded("delete", _schema({}, []), [_NAME | {"required": True}],
                   description="GPUd deregisters its custom plugins; none of ours can be (400)"),
        "/v1/states": _read(_STATES, _COMPONENTS, responses=_NOT_FOUND),
        "/v1/events": _read(_ARRAY_OF(_schema({"component": _S, "startTime": _S, "endTime": _S,
                                               "events": _ARRAY_OF(_EVENT)})),
                            [*_COMPONENTS, *_WINDOW], responses=_BAD | _NOT_FOUND),
        "/v1/metrics": _read(_ARRAY_OF(_schema({"component": _S, "metrics": _ARRAY_OF(_METRIC)})),
                             [*_COMPONENTS, *_SINCE], responses=_BAD | _NOT_FOUND),
        "/v1/info": _read(_INFO, [*_COMPONENTS, *_WINDOW, *_SINCE], responses=_BAD | _NOT_FOUND),
        "/v1/plugins": _read({"type": "array", "items": {"type": "object"}}),
        "/v1/components/trigger-check": _guarded("get", _STATES, [_NAME, _query("tagName", _NAMED)],
                                                 description="runs the custom checks named or tagged now (other "
                                                 "components: their latest states); componentName or tagName"),
        "/v1/components/trigger-tag": _guarded("get", _schema({"components": _ARR, "exit": {"type": "integer"},
                                                               "success": {"type": "boolean"}}),
                                               [_query("tagName", _NAMED, required=True)]),
        "/inject-fault": {
            "post": {
                "security": _TOKEN_NEEDED,
                "requestBody": {"required": True, "content": {"application/json": {"schema": _INJECTION}}},
                "responses": _ok(_schema({"ok": {"type": "boolean"}, "seq": {"type": "integer"}, "message": _S}))
                | _BAD
                | _WRITE_REFUSALS
                | {"403": _error("a wrong token, or injection is not allowed on this agent (--allow-inject)")},
            }
        },
        "/v1/health-states/set-healthy": _guarded("post", _SET_HEALTHY, [_query(
            "components", _LIST_PARAM, "comma-separated component names; none: every component the rules hold")]),
    },
}  # fmt: skip
