"""Custom checks in GPUd's plugin spec format: reading, validating, and parsing their output.

A GPUd plugin file (``/etc/default/gpud.plugins.yaml``) is a YAML list of specs::

    - plugin_name: nccl-allreduce          # the component its results are published under
      plugin_type: component               # init (before the agent is ready) | component
      run_mode: auto                       # auto (on its interval) | manual (only when triggered)
      timeout: 5m                          # Go durations; default 1m
      interval: 1h                         # 0 or absent: once, at start
      tags: [verify]
      health_state_plugin:
        steps:                             # bash scripts, in order; the first failure stops the run
          - name: run
            run_bash_script: {content_type: plaintext, script: "..."}   # or base64
        parser:
          json_paths:                      # over the first JSON object in the output
            - query: $.passed
              field: passed
              expect: {regex: "(?i)^true$"}
            - query: $.action
              field: action
              suggested_actions: {REBOOT_SYSTEM: {regex: "(?i)reboot"}}

Not supported, and refused with a message saying so: ``component_list``,
``component_list_file`` (one spec a component instead), ``run_mode: once``, and
the parser's ``log_path`` (results are events; ``gpuctl events`` shows them).
``dry_run`` is accepted and ignored. JSONPath queries are the common subset:
``$``, ``.name``, ``['name']``, ``[index]`` (negative counts from the end) and
``*`` (every child), which covers GPUd's examples.

Pure: no process is started here (``producers.checks`` runs them).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuhealth.config import parse_duration
from gpuhealth.errors import GpuhealthError
from producers.gpud_metrics import format_duration

MAX_NAME = 128
DEFAULT_TIMEOUT_S = 60.0
MISSING: Any = object()


class SpecError(GpuhealthError):
    """A check file that cannot be used: the message names the file, the check and the key."""

    exit_code = 64  # as ConfigError's: what the user gave is wrong


@dataclass(frozen=True)
class JsonPath:
    query: str
    field: str
    steps: tuple[str | int, ...]
    expect: re.Pattern[str] | None = None
    suggested_actions: dict[str, re.Pattern[str]] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class CheckSpec:
    name: str
    plugin_type: str  # init | component
    run_mode: str  # auto | manual
    timeout_s: float
    interval_s: float  # 0: once
    tags: tuple[str, ...]
    steps: tuple[tuple[str, str], ...]  # (step name, bash script)
    json_paths: tuple[JsonPath, ...]
    source: str = ""  # the file it came from

    def gpud_spec(self) -> dict[str, Any]:
        """GPUd's custom plugin Spec as /v1/plugins serves it, less the steps' scripts: the API's reads are open
        to every local user, and a check file may be readable by root alone."""
        spec: dict[str, Any] = {"plugin_name": self.name, "plugin_type": self.plugin_type, "run_mode": self.run_mode}
        if self.tags:
            spec["tags"] = list(self.tags)
        return spec | {"timeout": format_duration(self.timeout_s), "interval": format_duration(self.interval_s)}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.plugin_type, "run_mode": self.run_mode, "timeout_s": self.timeout_s,
                "interval_s": self.interval_s, "tags": list(self.tags), "steps": len(self.steps),
                "fields": [p.field for p in self.json_paths], "source": self.source}  # fmt: skip


@dataclass
class Parsed:
    """What the parser took from one run's output."""

    fields: dict[str, str] = dataclasses.field(default_factory=dict)
    expect_failed: list[str] = dataclasses.field(default_factory=list)
    suggested_actions: dict[str, str] = dataclasses.field(default_factory=dict)
    error: str = ""


# ---------------------------------------------------------------- durations and paths

_PATH_STEP = re.compile(r"\.([A-Za-z_][\w-]*|\*)|\[\s*(-?\d+|\*|'[^']*'|\"[^\"]*\")\s*\]")


def compile_query(query: str) -> tuple[str | int, ...]:
    """A JSONPath in the supported subset as steps: names, indexes and '*'."""
    q = query.strip()
    if not q.startswith("$"):
        raise ValueError(f"JSONPath {query!r} does not start with '$'")
    steps: list[str | int] = []
    pos = 1
    while pos < len(q):
        m = _PATH_STEP.match(q, pos)
        if m is None:
            raise ValueError(f"JSONPath {query!r}: unsupported at {q[pos:]!r} (supported: .name ['name'] [n] *)")
        name, bracket = m.group(1), m.group(2)
        if name is not None:
            steps.append(name)
        elif bracket in ("*",) or bracket[0] in "'\"":
            steps.append(bracket if bracket == "*" else bracket[1:-1])
        else:
            steps.append(int(bracket))
        pos = m.end()
    return tuple(steps)


def query_json(doc: Any, steps: tuple[str | int, ...]) -> Any:
    """The value at ``steps``, a list of values where a '*' was, or MISSING (JSON null counts as missing)."""
    values, many = [doc], False
    for step in steps:
        out: list[Any] = []
        for v in values:
            if step == "*":
                many = True
                out.extend(v.values() if isinstance(v, dict) else v if isinstance(v, list) else [])
            elif isinstance(step, int):
                if isinstance(v, list) and -len(v) <= step < len(v):
                    out.append(v[step])
            elif isinstance(v, dict) and step in v:
                out.append(v[step])
        values = [v for v in out if v is not None]
    if many:
        return values if values else MISSING
    return values[0] if values else MISSING


def as_text(value: Any) -> str:
    """A value as the parser's regexes see it: strings as they are, true/false, numbers without '.0',
    arrays and objects as compact JSON (the way GPUd prints them)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, separators=(",", ":"))


def first_json_object(output: str) -> dict[str, Any] | None:
    """The first JSON object in the output, which may have other lines around it; None when there is none."""
    start = output.find("{")
    while start != -1:
        try:
            value, _ = json.JSONDecoder().raw_decode(output, start)
        except ValueError:
            start = output.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = output.find("{", start + 1)
    return None


def parse_output(output: str, paths: tuple[JsonPath, ...]) -> Parsed:
    """GPUd's parser: each path's value as text, whether its ``expect`` matched (a missing value with an
    ``expect`` does not), and the suggested actions whose regex matched."""
    parsed = Parsed()
    if not paths:
        return parsed
    doc = first_json_object(output)
    if doc is None:
        if any(p.expect for p in paths):
            parsed.error = "no JSON object in the output"
            parsed.expect_failed = [p.field for p in paths if p.expect]
        return parsed
    for p in paths:
        value = query_json(doc, p.steps)
        if value is MISSING:
            if p.expect is not None:
                parsed.expect_failed.append(p.field)
            continue
        text = as_text(value)
        parsed.fields[p.field] = text
        if p.expect is not None and not p.expect.search(text):
            parsed.expect_failed.append(p.field)
        for action, pattern in p.suggested_actions.items():
            if pattern.search(text):
                prev = parsed.suggested_actions.get(action)
                parsed.suggested_actions[action] = f"{prev}, {text}" if prev else text
    return parsed


# ---------------------------------------------------------------- reading specs

_KNOWN = {"plugin_name", "plugin_type", "type", "run_mode", "timeout", "interval", "tags", "health_state_plugin",
          "dry_run"}  # fmt: skip
_UNSUPPORTED = {
    "component_list": "write one spec a component",
    "component_list_file": "write one spec a component",
    "state_plugin": "an old name: use health_state_plugin",
}


def load_file(path: Path) -> list[CheckSpec]:
    """Every spec in a GPUd plugin file; SpecError names the first problem."""
    import yaml  # only agents and commands that have check files pay for it

    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise SpecError(f"{path}: not YAML: {str(e).splitlines()[0]}") from None
    return load_specs(doc, str(path))


def load_files(paths: list[Path]) -> list[CheckSpec]:
    specs: list[CheckSpec] = []
    for path in paths:
        specs += load_file(path)
    seen: dict[str, str] = {}
    for s in specs:
        if s.name in seen:
            raise SpecError(f"{s.source}: check {s.name!r} is also defined in {seen[s.name]}")
        seen[s.name] = s.source
    return specs


def load_specs(doc: Any, source: str) -> list[CheckSpec]:
    if doc is None:
        return []
    if isinstance(doc, dict):  # one spec on its own
        doc = [doc]
    if not isinstance(doc, list):
        raise SpecError(f"{source}: expected a list of plugin specs, found {type(doc).__name__}")
    specs, names = [], set()
    for i, item in enumerate(doc):
        spec = _spec(item, f"{source}: spec {i + 1}")
        if spec.name in names:
            raise SpecError(f"{source}: check {spec.name!r} is defined twice")
        names.add(spec.name)
        specs.append(CheckSpec(**{**spec.__dict__, "source": source}))
    return specs


def _spec(item: Any, where: str) -> CheckSpec:
    if not isinstance(item, dict):
        raise SpecError(f"{where}: expected a mapping, found {type(item).__name__}")
    name = item.get("plugin_name")
    if not isinstance(name, str) or not name.strip():
        raise SpecError(f"{where}: plugin_name is required")
    if len(name) > MAX_NAME:
        raise SpecError(f"{where}: plugin_name is longer than {MAX_NAME} characters")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):  # it is the component: the wire refuses these
        raise SpecError(f"{where}: plugin_name {name!r} has a control character")
    where = f"{where} ({name})"
    for key in item:
        if key in _UNSUPPORTED:
            raise SpecError(f"{where}: {key} is not supported ({_UNSUPPORTED[key]})")
        if key not in _KNOWN:
            raise SpecError(f"{where}: unknown key {key!r}")
    ptype = item.get("plugin_type") or item.get("type") or "component"
    if ptype == "component_list":
        raise SpecError(f"{where}: type component_list is not supported (write one spec a component)")
    if ptype not in ("init", "component"):
        raise SpecError(f"{where}: plugin_type must be init or component, not {ptype!r}")
    run_mode = item.get("run_mode") or "auto"
    if run_mode not in ("auto", "manual"):
        raise SpecError(f"{where}: run_mode must be auto or manual, not {run_mode!r}")
    try:
        timeout = parse_duration(item.get("timeout") or 0) or DEFAULT_TIMEOUT_S
        interval = parse_duration(item.get("interval") or 0)
    except ValueError as e:
        raise SpecError(f"{where}: {e}") from None
    if timeout < 0 or interval < 0:
        raise SpecError(f"{where}: timeout and interval cannot be negative")
    if 0 < interval < 1:
        raise SpecError(f"{where}: interval {interval}s is under a second")
    tags = item.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise SpecError(f"{where}: tags must be a list of strings")
    plugin = item.get("health_state_plugin") or {}
    if not isinstance(plugin, dict):
        raise SpecError(f"{where}: health_state_plugin must be a mapping")
    for key in plugin:
        if key not in ("steps", "parser"):
            raise SpecError(f"{where}: unknown key health_state_plugin.{key}")
    steps = tuple(_step(s, f"{where}: step {j + 1}") for j, s in enumerate(plugin.get("steps") or []))
    if not steps:
        raise SpecError(f"{where}: health_state_plugin.steps is empty: nothing to run")
    return CheckSpec(name=name, plugin_type=ptype, run_mode=run_mode, timeout_s=timeout, interval_s=interval,
                     tags=tuple(tags), steps=steps, json_paths=_parser(plugin.get("parser"), where))  # fmt: skip


def _step(step: Any, where: str) -> tuple[str, str]:
    if not isinstance(step, dict) or not isinstance(step.get("run_bash_script"), dict):
        raise SpecError(f"{where}: each step needs run_bash_script (the only kind of step)")
    bash = step["run_bash_script"]
    content_type, script = bash.get("content_type") or "plaintext", bash.get("script")
    if not isinstance(script, str) or not script.strip():
        raise SpecError(f"{where}: run_bash_script.script is empty")
    if content_type == "base64":
        try:
            script = base64.b64decode(script, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError) as e:
            raise SpecError(f"{where}: script is not base64 of UTF-8 text: {e}") from None
    elif content_type != "plaintext":
        raise SpecError(f"{where}: content_type must be plaintext or base64, not {content_type!r}")
    return str(step.get("name") or ""), script


def _regex(rule: Any, where: str) -> re.Pattern[str]:
    if not isinstance(rule, dict) or not isinstance(rule.get("regex"), str):
        raise SpecError(f"{where}: expected {{regex: ...}}")
    try:
        return re.compile(rule["regex"])
    except re.error as e:
        raise SpecError(f"{where}: bad regex {rule['regex']!r}: {e}") from None


def _parser(parser: Any, where: str) -> tuple[JsonPath, ...]:
    if not parser:
        return ()
    if not isinstance(parser, dict):
        raise SpecError(f"{where}: parser must be a mapping")
    if "log_path" in parser:
        raise SpecError(f"{where}: parser.log_path is not supported (each run is an event: gpuctl events)")
    out = []
    for k, p in enumerate(parser.get("json_paths") or []):
        at = f"{where}: json_paths[{k}]"
        if not isinstance(p, dict) or not isinstance(p.get("query"), str):
            raise SpecError(f"{at}: query is required")
        try:
            steps = compile_query(p["query"])
        except ValueError as e:
            raise SpecError(f"{at}: {e}") from None
        actions = p.get("suggested_actions") or {}
        if not isinstance(actions, dict):
            raise SpecError(f"{at}: suggested_actions must map an action to {{regex: ...}}")
        out.append(JsonPath(query=p["query"], field=str(p.get("field") or p["query"]), steps=steps,
                            expect=_regex(p["expect"], f"{at}.expect") if p.get("expect") else None,
                            suggested_actions={str(a): _regex(r, f"{at}.suggested_actions.{a}")
                                               for a, r in actions.items()}))  # fmt: skip
    return tuple(out)
