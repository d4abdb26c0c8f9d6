"""The agent API's OpenAPI document: what each endpoint takes and answers, exactly (the tests fuzz the server
against it with schemathesis, so what it accepts and what this says must agree).

Reads need nothing, as GPUd has them. Writes need the agent's token, a file only its user can read
(``<data-dir>/agent/api-token``, mode 0600), sent as ``Authorization: Bearer <token>``."""

from __future__ import annotations

import re
from typing import Any

from gpuhealth.events import KERNEL_PRIORITIES
from producers.gpud_metrics import DURATION_PATTERN

COMPONENT_LIST = re.compile(r"^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$")


def _schema(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or list(props)}


_S, _ARR = {"type": "string"}, {"type": "array", "items": {"type": "string"}}
# RFC 3339 as GPUd sends it, unix seconds, or empty for the default (the last hour, until now)
_TIME = {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "pattern": "^[0-9]{1,10}$"},
                   {"type": "string", "maxLength": 0}]}  # fmt: skip
_STATE = _schema({"time": _S, "component": _S, "name": _S, "health": _S, "reason": _S,
                  "suggested_actions": _schema({"description": _S, "repair_actions": _ARR}),
                  "extra_info": _schema({"data": _S, "encoding": _S})},  # GPUd's detail components: JSON in data
                 ["time", "component", "name", "health", "reason", "suggested_actions"])  # fmt: skip
_EVENT = _schema({"time": _S, "name": _S, "type": _S, "message": _S})
_INJECTION = {"anyOf": [
    _schema({"kernel_message": _schema({
        "priority": {"anyOf": [{"enum": list(KERNEL_PRIORITIES)}, {"type": "integer", "minimum": 0, "maximum": 7}]},
        "message": {"type": "string", "minLength": 1, "maxLength": 4096}}, ["message"])}),
    _schema({"xid": _schema({"id": {"type": "integer", "minimum": 1, "maximum": 65535}})}),
]}  # fmt: skip
_ERROR = {"description": "error", "content": {"application/json": {"schema": _schema({"error": _S})}}}
# GPUd's api/v1 MachineInfo: what its clients require (Flow: gpuInfo.gpus, a list of objects), and our node.
_GPU = _schema({"uuid": _S, "busID": _S, "sn": _S, "index": {"type": "integer"}, "name": _S}, ["busID", "index"])
_MACHINE_INFO = _schema({"gpudVersion": _S, "machineID": _S, "bootID": _S, "hostname": _S, "node": _S,
                         "cluster": _S, "gpuInfo": _schema({"product": _S, "gpus": {"type": "array", "items": _GPU}},
                                                           ["gpus"])},
                        ["gpudVersion", "machineID", "bootID", "node", "cluster", "gpuInfo"])  # fmt: skip
OWN_MACHINE_INFO = "/gpuhealth/v1/machine-info"  # gpuhealth's own inventory view, beside GPUd's
OWN_METRICS = "/gpuhealth/v1/metrics"  # the latest batches in gpuhealth's own names, beside GPUd's history
_COMPONENTS = [{"name": "components", "in": "query", "required": False, "schema": _S,
                "description": "comma-separated component names"}]  # fmt: skip


def _ok(schema: dict[str, Any]) -> dict[str, Any]:
    return {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}


def _error(description: str) -> dict[str, Any]:
    return _ERROR | {"description": description}


# What every write may also answer: no token, a wrong one, a body over 64 KiB.
_WRITE_REFUSALS = {
    "401": _error("no token: send Authorization: Bearer <token> (the answer carries WWW-Authenticate: Bearer)"),
    "403": _error("a wrong token"),
    "413": _error("a body over 64 KiB"),
}
_TOKEN_NEEDED: list[dict[str, list[str]]] = [{"agentToken": []}]


OPENAPI: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {
        "title": "gpuhealth agent API (GPUd-compatible)",
        "version": "v1",
        "description": "Reads are open. Writes (POST) need the agent's token, readable only by the agent's user: "
        "Authorization: Bearer $(cat <data-dir>/agent/api-token), by default /var/lib/gpuhealth/agent/api-token. "
        "A request body is at most 64 KiB and its JSON at most 32 levels deep; a connection idle for 5 s is "
        "closed, and a request must arrive within 5 s.",
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
        "/healthz": {"get": {"responses": _ok(_schema({"status": _S, "version": _S}))}},
        "/machine-info": {"get": {"responses": _ok(_MACHINE_INFO)}},
        OWN_MACHINE_INFO: {
            "get": {
                "responses": _ok(
                    _schema(
                        {"node": _S, "cluster": _S, "machineID": _S, "bootID": _S, "gpuCount": {"type": "integer"}},
                        ["node", "cluster", "gpuCount"],
                    )
                )
            }
        },
        OWN_METRICS: {
            "get": {
                "responses": _ok({"type": "array", "items": _schema({"component": _S, "metrics": {"type": "array"}})})
            }
        },
        "/v1/components": {"get": {"responses": _ok(_ARR)}},
        "/v1/states": {
            "get": {
                "parameters": _COMPONENTS,
                "responses": _ok(
                    {"type": "array", "items": _schema({"component": _S, "states": {"type": "array", "items": _STATE}})}
                ),
            }
        },
        "/v1/events": {
            "get": {
                "parameters": [
                    *_COMPONENTS,
                    {"name": "startTime", "in": "query", "required": False, "schema": _TIME},
                    {"name": "endTime", "in": "query", "required": False, "schema": _TIME},
                ],
                "responses": _ok(
                    {
                        "type": "array",
                        "items": _schema(
                            {
                                "component": _S,
                                "startTime": _S,
                                "endTime": _S,
                                "events": {"type": "array", "items": _EVENT},
                            }
                        ),
                    }
                )
                | {"400": _ERROR},
            }
        },
        "/v1/metrics": {
            "get": {
                "parameters": [
                    *_COMPONENTS,
                    {
                        "name": "since",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "string", "pattern": DURATION_PATTERN},
                        "description": "a Go duration back from now (30m, 1h30m); 30m unless given",
                    },
                ],
                "responses": _ok(
                    {
                        "type": "array",
                        "items": _schema(
                            {
                                "component": _S,
                                "metrics": {
                                    "type": "array",
                                    "items": _schema(
                                        {
                                            "unix_seconds": {"type": "integer"},
                                            "name": _S,
                                            "labels": {"type": "object"},
                                            "value": {"type": "number"},
                                        },
                                        ["unix_seconds", "name", "value"],  # GPUd's labels are omitempty
                                    ),
                                },
                            }
                        ),
                    }
                )
                | {"400": _ERROR},
            }
        },
        "/inject-fault": {
            "post": {
                "security": _TOKEN_NEEDED,
                "requestBody": {"required": True, "content": {"application/json": {"schema": _INJECTION}}},
                "responses": _ok(_schema({"ok": {"type": "boolean"}, "seq": {"type": "integer"}, "message": _S}))
                | {"400": _ERROR}
                | _WRITE_REFUSALS
                | {"403": _error("a wrong token, or injection is not allowed on this agent (--allow-inject)")},
            }
        },
        "/v1/health-states/set-healthy": {
            "post": {
                "security": _TOKEN_NEEDED,
                "parameters": [
                    {
                        "name": "components",
                        "in": "query",
                        "required": True,
                        "schema": {"type": "string", "pattern": COMPONENT_LIST.pattern},
                        "description": "comma-separated component names",
                    }
                ],
                "responses": _ok(
                    _schema({"ok": {"type": "boolean"}, "components": _ARR, "events": {"type": "integer"}})
                )
                | {"400": _ERROR}
                | _WRITE_REFUSALS,
            }
        },
    },
}
