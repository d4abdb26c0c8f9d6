"""The local API's routes: what each request of GPUd's API (and gpuhealth's own) is answered with.

Reads are open, as GPUd has them. What changes the agent's state or runs work on demand (POST, DELETE, the
trigger endpoints) needs the agent's bearer token first, before anything else of the request is read or routed.
Answers follow GPUd's server: the format the request's Content-Type asks for, gzip under /v1/ when accepted, its
status codes and ``{"code", "message"}`` errors (gpud_wire).
"""

from __future__ import annotations

import datetime as dt
import re
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import generate_latest

from gpuhealth.events import CheckResult
from producers import exposition, gpud_detail, gpud_metrics, gpud_wire
from producers.api_auth import check_bearer
from producers.api_doc import COMPONENT_LIST, INJECT_PRIORITIES, OPENAPI, OWN_MACHINE_INFO, OWN_METRICS
from producers.api_http import ClientError, GuardedHandler
from producers.kernel import xid_line

if TYPE_CHECKING:
    from producers.api import Api

MAX_NS = 253_402_300_799 * 10**9  # 9999-12-31T23:59:59Z
_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
CHECK_GRACE_S = 15.0  # beyond a check's own timeout: the agent's loop, the publish of its result
_TOKEN_NEEDED = frozenset({"/v1/components/trigger-check", "/v1/components/trigger-tag"})  # GETs that run work


def time_param(values: list[str] | None, default: int) -> int:
    """GPUd sends RFC 3339 (any number of fraction digits); unix seconds are accepted too."""
    if not values or not values[0]:
        return default
    text = values[0]
    if re.fullmatch(r"[0-9]{1,10}", text):
        return int(text) * 1_000_000_000
    m = _RFC3339.match(text)
    if m:
        zone = "+00:00" if m.group(4) in ("Z", "z") else m.group(4)
        fraction = (m.group(3) or ".0")[:7]  # microseconds are enough for a window
        try:
            t = dt.datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}{fraction}{zone}").timestamp()
        except (ValueError, OverflowError):
            pass  # a date that does not exist (2026-02-30)
        else:
            return min(max(int(t * 1e9), 0), MAX_NS)  # before 1970 or after 9999 means "from the start" / "on"
    raise ClientError(400, f"bad time {text!r}: RFC 3339 or unix seconds")


def since_param(values: list[str] | None) -> int:
    """GPUd's ``since``: a Go duration back from now, 30 minutes unless given."""
    if not values or not values[0]:
        return gpud_metrics.DEFAULT_SINCE_NS
    try:
        return gpud_metrics.parse_duration(values[0])
    except ValueError as e:
        raise ClientError(400, f"failed to parse duration: {e}") from None


def injection(body: dict[str, Any], default_pci: str) -> tuple[str, int]:
    """GPUd's bodies: {"kernel_message": {"priority", "message"}} or {"xid": {"id": N}}."""
    km = body.get("kernel_message")
    if isinstance(km, dict) and isinstance(km.get("message"), str) and 0 < len(km["message"]) <= 4096:
        priority = km.get("priority", "KERN_ERR")
        if isinstance(priority, int) and not isinstance(priority, bool) and 0 <= priority <= 7:
            return km["message"], priority
        if isinstance(priority, str) and priority in INJECT_PRIORITIES:
            return km["message"], INJECT_PRIORITIES[priority]
    x = body.get("xid")
    if isinstance(x, dict) and isinstance(x.get("id"), int) and not isinstance(x["id"], bool) and 0 < x["id"] < 1 << 16:
        return xid_line(default_pci[:-2], x["id"], "injected through the API"), 3
    raise ClientError(400, 'give {"kernel_message": {"priority": "KERN_ERR", "message": "…"}} or {"xid": {"id": 79}}')


class Handler(GuardedHandler):
    api: Api
    fmt = "json"  # the answer's format (gpud_wire.wants), once the request's headers are read

    def __getattr__(self, name: str) -> Any:
        # The stdlib answers a method without a do_* with 501; an API says 405 and what is allowed.
        if name.startswith("do_"):
            return self._unknown_method
        raise AttributeError(name)

    def _unknown_method(self) -> None:
        try:
            self._not_allowed()
        except ClientError as e:
            self.refuse(e)

    def _not_allowed(self) -> None:
        path = urlsplit(self.path).path
        methods = [m.upper() for m in OPENAPI["paths"].get(path, {}) if m != "parameters"]
        if not methods:
            raise ClientError(404, f"no such endpoint {path}")
        allowed = ", ".join(methods)
        raise ClientError(405, f"{self.command} is not allowed on {path}: {allowed}", {"Allow": allowed})

    def _handle(self, method: str) -> None:
        try:
            url = urlsplit(self.path)
            if method != "get" or url.path in _TOKEN_NEEDED:
                self._authorize()
            if url.path in OPENAPI["paths"] and method not in OPENAPI["paths"][url.path]:
                self._not_allowed()
            self.fmt = gpud_wire.wants(self.headers) if method == "get" else "json"  # GPUd's writes: JSON
            getattr(self, f"_{method}")(url.path, parse_qs(url.query, keep_blank_values=True))
        except gpud_wire.BadContentType:
            self.refuse(ClientError(400, "invalid content type"))
        except ClientError as e:
            self.refuse(e)

    def do_GET(self) -> None:  # the stdlib's name
        self._handle("get")

    def do_POST(self) -> None:  # the stdlib's name
        self._handle("post")

    def do_DELETE(self) -> None:  # the stdlib's name
        self._handle("delete")

    def _authorize(self) -> None:
        refused = check_bearer(self.headers, self.api.token)
        if refused == 401:
            raise ClientError(401, "this needs the agent's token: Authorization: Bearer <token>",
                              {"WWW-Authenticate": 'Bearer realm="gpuhealth"'})  # fmt: skip
        if refused:
            raise ClientError(403, "the token is wrong")

    def answer(self, body: Any, code: int = 200) -> None:
        """A GPUd answer: in the format asked for, gzip-compressed where GPUd's would be."""
        data, content_type = gpud_wire.render(body, self.fmt)
        headers = {}
        if gpud_wire.gzipped(self.headers, urlsplit(self.path).path):
            data, headers = gpud_wire.compress(data), {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
        self.respond(code, data, content_type, headers)

    def _components(self, q: dict[str, list[str]], key: str = "components") -> set[str] | None:
        """The components asked for (None: all); GPUd's 404 for one it does not know."""
        names = {c for v in q.get(key, []) for c in v.split(",") if c} or None
        unknown = sorted(names - self.api.view.known()) if names else []
        if unknown:
            raise ClientError(404, f"component not found: component {unknown[0]} not found (not found)")
        return names

    def _get(self, path: str, q: dict[str, list[str]]) -> None:
        view = self.api.view
        now = int(dt.datetime.now(dt.UTC).timestamp() * 1e9)
        if path == "/healthz":
            # GPUd's client compares these bytes
            self.respond(200, {"status": "ok", "version": "v1"}, gpud_wire.JSON_TYPE)
        elif path == "/metrics":
            text = generate_latest(view.registry) + exposition.dcgm_text(view).encode()
            self.respond(200, text, "text/plain; version=0.0.4; charset=utf-8")
        elif path in ("/machine-info", OWN_MACHINE_INFO, OWN_METRICS, "/openapi.json", "/v1/plugins"):
            self.answer({"/machine-info": view.machine_info, OWN_MACHINE_INFO: view.own_machine_info,
                         OWN_METRICS: view.own_metrics_json, "/openapi.json": lambda: OPENAPI,
                         "/v1/plugins": view.plugin_specs}[path]())  # fmt: skip
        elif path == "/v1/components":
            self.answer(view.components())
        elif path == "/v1/states":
            self.answer(view.states_json(self._components(q)))
        elif path == "/v1/events":
            components = self._components(q)
            start = time_param(q.get("startTime"), now - 3600 * 10**9)
            self.answer(view.events_json(start, time_param(q.get("endTime"), now + 1), components))
        elif path == "/v1/metrics":
            components = self._components(q)
            self.answer(view.metrics_json(now - since_param(q.get("since")), components))
        elif path == "/v1/info":
            components = self._components(q)
            start = time_param(q.get("startTime"), now - 3600 * 10**9)
            end, since = time_param(q.get("endTime"), now + 1), now - since_param(q.get("since"))
            self.answer(view.info_json(start, end, since, components))
        elif path == "/v1/components/trigger-check":
            self._trigger_check(q)
        elif path == "/v1/components/trigger-tag":
            self._trigger_tag(q)
        else:
            raise ClientError(404, f"no such endpoint {path}")

    def _trigger_check(self, q: dict[str, list[str]]) -> None:
        """As GPUd: run the component's check now, or those of every component with the tag, and answer their
        states. What runs on demand are the custom checks; the agent's own readings run on their intervals, so a
        component of theirs answers its latest states."""
        name, tag = (q.get("componentName") or [""])[0], (q.get("tagName") or [""])[0]
        if not name and not tag:
            raise ClientError(400, "component or tag name is required")
        view = self.api.view
        names = [name] if name else view.tagged(tag)
        if name:
            self._components(q, "componentName")
        ran = self._run(names) if set(names) <= view.check_names() else None
        if ran is not None:
            self.answer([{"component": r.component, "states": [gpud_detail.state(r.component, *r.verdict())]}
                         for r in ran])  # fmt: skip
        else:
            self.answer(view.states_json(set(names)) if names else [])

    def _trigger_tag(self, q: dict[str, list[str]]) -> None:
        """GPUd's summary of the components with a tag, their checks run now: success if every one is Healthy."""
        tag = (q.get("tagName") or [""])[0]
        if not tag:
            raise ClientError(400, "tagName parameter is required")
        tagged = self.api.view.tagged(tag)
        ran = self._run(tagged)
        if ran is not None:
            ok = all(r.verdict()[0] == "Healthy" for r in ran)
        else:
            states = self.api.view.states_json(set(tagged)) if tagged else []
            ok = all(s["health"] == "Healthy" for c in states for s in c["states"])
        self.answer({"components": tagged, "exit": 0 if ok else 1, "success": ok})

    def _run(self, checks: list[str]) -> list[CheckResult] | None:
        """The custom checks named, run now; None where the agent runs none on demand (or none is named)."""
        run = self.api.actions.run_checks
        if run is None or not checks:
            return None
        # The connection's deadline is the request's read time: a check may run for its whole timeout.
        timeouts = [gpud_metrics.parse_duration(str(p.get("timeout") or "0")) for p in self.api.view.plugins
                    if p["plugin_name"] in checks]  # fmt: skip
        self.conn.deadline = time.monotonic() + max(timeouts, default=0) / 1e9 + CHECK_GRACE_S
        try:
            return run(checks, None)
        except KeyError as e:
            raise ClientError(404, f"component not found: {e.args[0]}") from None

    def _delete(self, path: str, q: dict[str, list[str]]) -> None:
        if path != "/v1/components":
            raise ClientError(404, f"no such endpoint {path}")
        if not (q.get("componentName") or [""])[0]:
            raise ClientError(400, "component name is required")
        self._components(q, "componentName")
        # GPUd deregisters only its custom plugins; ours (--checks) come from a file the agent reads at start.
        raise ClientError(400, "component is not deregisterable")

    def _post(self, path: str, q: dict[str, list[str]]) -> None:
        if path not in ("/inject-fault", "/v1/health-states/set-healthy"):
            raise ClientError(404, f"no such endpoint {path}")
        body = self.read_json()
        body = {} if body is None else body
        if not isinstance(body, dict):
            raise ClientError(400, "the body must be a JSON object")
        actions = self.api.actions
        if path == "/inject-fault":
            if not actions.allow_inject:
                raise ClientError(403, "injection is not allowed on this agent (start it with --allow-inject)")
            message, priority = injection(body, actions.default_pci)
            seq = actions.inject(message, priority)
            self.answer({"ok": True, "seq": seq, "message": message})
            return
        names = q.get("components", [])
        if names and names[0] and (len(names) != 1 or not COMPONENT_LIST.fullmatch(names[0])):
            raise ClientError(400, "failed to parse components: ?components=accelerator-nvidia-error-xid,…")
        asked = self._components(q)
        components = sorted(asked) if asked else self.api.view.held_components()  # none named: all, as GPUd
        n = actions.set_healthy(components, str(body.get("reason", "") or "set healthy through the API"))
        self.answer({"code": 200, "message": "set healthy states completed", **({"successful": components}
                     if components else {}), "ok": True, "components": components, "events": n})  # fmt: skip
