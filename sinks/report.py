"""The weekly fleet report: the SQL files in ``sinks/queries/weekly/``, run for one ISO week, rendered.

Each section is one query a person can run by hand (``gpuctl sql "$(cat …)"`` with
``start`` and ``end`` set); this module only runs them in order and renders the
rows as text, JSON, Markdown or a self-contained HTML page with inline SVG charts
(no network, no JavaScript). Queries read rollups (``metrics_hourly``, ``actions``,
``incidents``), never a scan of raw samples.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from gpuhealth.errors import ConfigError

Query = Callable[[str, dict[str, Any]], Awaitable[tuple[list[str], list[list[Any]]]]]

# key → title, in the order of the files
TITLES = {
    "availability": "Availability per node",
    "incidents_by_code": "Incidents by component, code and GPU model",
    "top_nodes": "Top nodes",
    "top_gpus": "Top GPUs",
    "followed_serial": "GPUs whose faults followed their serial across hosts",
    "actions": "Repair actions issued and cleared",
    "ecc_trend": "ECC and remapped rows per day",
    "mtbf": "Mean time between failures per GPU model",
}


@dataclass
class Section:
    key: str
    title: str
    sql: str
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)


def sections() -> list[Section]:
    files = sorted((f for f in resources.files("sinks").joinpath("queries", "weekly").iterdir()
                    if f.name.endswith(".sql")), key=lambda f: f.name)  # fmt: skip
    out = []
    for f in files:
        key = re.sub(r"^\d+_", "", f.name.removesuffix(".sql"))
        out.append(Section(key, TITLES.get(key, key.replace("_", " ")), f.read_text()))
    return out


def week_bounds(week: str | None, today: dt.date | None = None) -> tuple[dt.datetime, dt.datetime, str]:
    """'2026-W47' → (Monday 00:00 UTC, the next Monday, label); None → the last complete week;
    'this' → the week in progress."""
    today = today or dt.datetime.now(dt.UTC).date()
    if week is None:
        monday = today - dt.timedelta(days=today.weekday() + 7)
    elif week.strip().lower() in ("this", "current"):
        monday = today - dt.timedelta(days=today.weekday())
    else:
        m = re.fullmatch(r"(\d{4})-W(\d{2})", week.strip())
        if not m:
            raise ConfigError(f"bad week {week!r}: use the ISO form 2026-W47, or 'this'")
        try:
            monday = dt.date.fromisocalendar(int(m.group(1)), int(m.group(2)), 1)
        except ValueError as e:
            raise ConfigError(f"bad week {week!r}: {e}") from None
    start = dt.datetime.combine(monday, dt.time(), dt.UTC)
    year, number, _ = monday.isocalendar()
    return start, start + dt.timedelta(days=7), f"{year}-W{number:02d}"


async def collect(query: Query, start: dt.datetime, end: dt.datetime,
                  advance: Callable[[str], None] = lambda _: None) -> list[Section]:  # fmt: skip
    params = {"start": start.strftime("%Y-%m-%d %H:%M:%S"), "end": end.strftime("%Y-%m-%d %H:%M:%S")}
    out = []
    for s in sections():
        advance(s.title)
        s.columns, rows = await query(s.sql, params)
        s.rows = [{c: _plain(v) for c, v in zip(s.columns, r, strict=True)} for r in rows]
        out.append(s)
    return out


def _plain(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        return v.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    if isinstance(v, float) and v != v:  # NaN
        return None
    return v


# ---------------------------------------------------------------- rendering


def render(fmt: str, label: str, start: dt.datetime, end: dt.datetime, secs: list[Section]) -> str:
    if fmt == "json":
        body = {"week": label, "start": _plain(start), "end": _plain(end),
                "sections": {s.key: s.rows for s in secs}}  # fmt: skip
        return json.dumps(body, indent=2, default=str) + "\n"
    if fmt == "md":
        return _markdown(label, secs)
    if fmt == "html":
        return _html(label, start, end, secs)
    if fmt == "text":
        return _text(label, secs)
    raise ConfigError(f"unknown format {fmt!r}: text, json, md or html")


def _cell(v: Any) -> str:
    if isinstance(v, list):
        return ", ".join(map(str, v))
    return "-" if v is None else str(v)


def _text(label: str, secs: list[Section]) -> str:
    lines = [f"gpuhealth weekly report {label}", ""]
    for s in secs:
        lines.append(f"== {s.title} ==")
        if not s.rows:
            lines += ["(none)", ""]
            continue
        table = [s.columns] + [[_cell(r[c]) for c in s.columns] for r in s.rows]
        widths = [min(48, max(len(row[i]) for row in table)) for i in range(len(s.columns))]
        lines += ["  ".join(v[:48].ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in table]
        lines.append("")
    return "\n".join(lines)


def _markdown(label: str, secs: list[Section]) -> str:
    lines = [f"# gpuhealth weekly report {label}", ""]
    for s in secs:
        lines += [f"## {s.title}", ""]
        if not s.rows:
            lines += ["None.", ""]
            continue
        lines.append("| " + " | ".join(s.columns) + " |")
        lines.append("|" + "---|" * len(s.columns))
        lines += ["| " + " | ".join(_cell(r[c]).replace("|", "\\|") for c in s.columns) + " |" for r in s.rows]
        lines.append("")
    return "\n".join(lines)


# Charts: which column of which section, as horizontal bars (label column, value column).
CHARTS = {
    "availability": ("node", "unhealthy_s", "hours Unhealthy", 1 / 3600),
    "incidents_by_code": ("code", "incidents", "incidents", 1.0),
    "top_nodes": ("node", "incidents", "incidents", 1.0),
    "actions": ("action", "times", "times", 1.0),
    "mtbf": ("model", "mtbf_hours", "MTBF, hours", 1.0),
}


def _bars(rows: list[dict[str, Any]], label: str, value: str, unit: str, scale: float) -> str:
    data = [(str(r[label]), float(r[value] or 0) * scale) for r in rows[:15]]
    if not data:
        return ""
    top = max(v for _, v in data) or 1.0
    h, width = 22, 640
    out = [f'<svg class="chart" width="{width}" height="{h * len(data) + 24}" role="img" '
           f'aria-label="{html.escape(unit)}">']  # fmt: skip
    for i, (name, v) in enumerate(data):
        w = max(1, int((width - 260) * v / top))
        y = i * h
        out.append(f'<text x="0" y="{y + 15}" font-size="12">{html.escape(name[:32])}</text>'
                   f'<rect x="220" y="{y + 3}" width="{w}" height="{h - 8}" fill="#3b6ea8"/>'
                   f'<text x="{224 + w}" y="{y + 15}" font-size="12">{v:,.1f}</text>')  # fmt: skip
    out.append(f'<text x="220" y="{h * len(data) + 18}" font-size="11" fill="#555">{html.escape(unit)}</text></svg>')
    return "".join(out)


def _trend(rows: list[dict[str, Any]]) -> str:
    """ECC per day: one polyline per counter."""
    series: dict[str, list[tuple[str, float]]] = {}
    for r in rows:
        series.setdefault(str(r["name"]), []).append((str(r["day"]), float(r["total"] or 0)))
    if not series:
        return ""
    days = sorted({d for s in series.values() for d, _ in s})
    top = max((v for s in series.values() for _, v in s), default=1.0) or 1.0
    w, h, colours = 640, 200, ["#3b6ea8", "#c0392b", "#27ae60", "#8e44ad", "#d35400", "#16a085", "#7f8c8d"]
    out = [f'<svg class="chart" width="{w}" height="{h + 40}" role="img" aria-label="ECC per day">']
    step = (w - 40) / max(1, len(days) - 1)
    for n, (name, pts) in enumerate(sorted(series.items())):
        xy = " ".join(f"{20 + days.index(d) * step:.0f},{h - v / top * (h - 20):.0f}" for d, v in pts)
        colour = colours[n % len(colours)]
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{xy}"/>'
                   f'<text x="{20 + 150 * (n % 4)}" y="{h + 20 + 14 * (n // 4)}" font-size="11" '
                   f'fill="{colour}">{html.escape(name)}</text>')  # fmt: skip
    out.append("</svg>")
    return "".join(out)


def _html(label: str, start: dt.datetime, end: dt.datetime, secs: list[Section]) -> str:
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>gpuhealth weekly report {label}</title>",
        "<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;"
        "margin:.5em 0 2em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#f3f3f3}"
        "h2{margin-top:1.5em}.chart{display:block;margin:.5em 0}</style></head><body>",
        f"<h1>gpuhealth weekly report {label}</h1>",
        f"<p>{_plain(start)} to {_plain(end)}</p>",
    ]
    for s in secs:
        parts.append(f"<h2>{html.escape(s.title)}</h2>")
        if not s.rows:
            parts.append("<p>None.</p>")
            continue
        if s.key in CHARTS:
            parts.append(_bars(s.rows, *CHARTS[s.key]))
        elif s.key == "ecc_trend":
            parts.append(_trend(s.rows))
        parts.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in s.columns) + "</tr>")
        for r in s.rows:
            parts.append("<tr>" + "".join(f"<td>{html.escape(_cell(r[c]))}</td>" for c in s.columns) + "</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
