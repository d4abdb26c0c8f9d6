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
    "responder": "The responder's drains and resumes",
    "common_causes": "Common causes (fleet incidents)",
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
        return ", ".join(map(_cell, v))
    if isinstance(v, float) and v.is_integer():
        return str(int(v))  # ClickHouse sums counters as floats: 5 errors, not 5.0
    return "-" if v is None else str(v)


def _html_cell(column: str, v: Any) -> str:
    """A duration column (…_s) in the unit that fits, its seconds on hover."""
    if column.endswith("_s") and isinstance(v, int | float):
        return f'<td title="{_cell(v)} s">{html.escape(duration(v))}</td>'
    return f"<td>{html.escape(_cell(v))}</td>"


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


def _number(v: float) -> str:
    """Integers as integers (5, not 5.0), anything else to one decimal."""
    return f"{v:,.1f}".removesuffix(".0")


def duration(seconds: float) -> str:
    """In the largest unit it fills: 158 → '2.6 min', 36000 → '10 h', 94608 → '1.1 d' (0.0 h says nothing)."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{_number(seconds / size)} {unit}"
    return f"{_number(seconds)} s"


@dataclass(frozen=True)
class Chart:
    """A section as horizontal bars: one a row, labelled by ``label`` columns, one segment a ``values`` column
    (column, legend, colour), longest first; ``scale`` brings a value to the unit ``fmt`` takes."""

    name: str
    label: tuple[str, ...]
    values: tuple[tuple[str, str, str], ...]
    fmt: Callable[[float], str] = _number
    scale: float = 1.0


BLUE = "#3b6ea8"
CHARTS = {
    "availability": Chart("time not Healthy", ("node",), (("unhealthy_s", "Unhealthy", "#c0392b"),
                          ("degraded_s", "Degraded", "#e67e22"), ("unknown_s", "Unknown", "#7f8c8d")), duration),
    "incidents_by_code": Chart("incidents", ("code", "gpu_model"), (("incidents", "incidents", BLUE),)),
    "top_nodes": Chart("incidents by node", ("node",), (("incidents", "incidents", BLUE),)),
    "actions": Chart("repair actions", ("event", "action"), (("times", "times", BLUE),)),
    "mtbf": Chart("MTBF", ("model",), (("mtbf_hours", "GPU-hours observed per failure", BLUE),), duration, 3600),
}  # fmt: skip
FONT_W = 7.5  # a generous width of one character at 12px, so that a label's room is never short
BAR_X = 250  # where bars start: after a label of 30 characters


def _bar_rows(rows: list[dict[str, Any]], chart: Chart) -> list[tuple[str, list[float], str]]:
    """(label, segment values, value text), longest bar first; a row with no value (an MTBF without a failure)
    says so, last."""
    out = []
    for r in rows:
        raw = [r[c] for c, _, _ in chart.values]
        vals = [float(v or 0) * chart.scale for v in raw]
        text = "no failures" if all(v is None for v in raw) else chart.fmt(sum(vals))
        out.append((" ".join(str(r[c]) for c in chart.label if r[c] not in (None, "")), vals, text))
    return sorted(out, key=lambda d: -sum(d[1]))[:15]


def _bars(rows: list[dict[str, Any]], chart: Chart) -> str:
    """Labels, then a bar a row with its value just after it, a legend when it has segments, the chart's name."""
    data = _bar_rows(rows, chart)
    if not data:
        return ""
    top = max(sum(v) for _, v, _ in data) or 1.0
    h, width = 22, 720
    room = int(FONT_W * max(len(t) for _, _, t in data)) + 12  # the value labels' room: none is clipped
    legend = len(chart.values) > 1
    out = [f'<svg class="chart" width="{width}" height="{h * len(data) + (44 if legend else 24)}" role="img" '
           f'aria-label="{html.escape(chart.name)}">']  # fmt: skip
    for i, (name, vals, text) in enumerate(data):
        y, x = i * h, BAR_X
        short = name if len(name) <= 30 else name[:29] + "…"
        out.append(f'<text x="0" y="{y + 15}" font-size="12"><title>{html.escape(name)}</title>'
                   f"{html.escape(short)}</text>")  # fmt: skip
        segs = ""
        for v, (_, _, colour) in zip(vals, chart.values, strict=True):
            w = max(1, round((width - BAR_X - room) * v / top)) if v > 0 else 0
            segs += f'<rect x="{x}" y="{y + 3}" width="{w}" height="{h - 8}" fill="{colour}"/>' if w else ""
            x += w
        out.append(f'<g class="bar">{segs}</g>' if segs else "")
        out.append(f'<text class="value" x="{x + 4}" y="{y + 15}" font-size="12">{html.escape(text)}</text>')
    out.append(_legend(chart, h * len(data) + 18) if legend else "")
    out.append(f'<text x="{BAR_X}" y="{h * len(data) + (38 if legend else 18)}" font-size="11" fill="#555">'
               f"{html.escape(chart.name)}</text></svg>")  # fmt: skip
    return "".join(out)


def _legend(chart: Chart, y: int) -> str:
    """Swatches in a row, each entry as wide as its text."""
    out, x = [], BAR_X
    for _, name, colour in chart.values:
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{x + 14}" y="{y}" font-size="11">{html.escape(name)}</text>')  # fmt: skip
        x += 14 + int(FONT_W * len(name)) + 16
    return "".join(out)


TREND_COLOURS = ["#3b6ea8", "#c0392b", "#27ae60", "#8e44ad", "#d35400", "#16a085", "#7f8c8d", "#2c3e50"]


def _trend(rows: list[dict[str, Any]]) -> str:
    """ECC per day: a line and a dot a day for each counter (one day of data is dots), and a legend with a
    line of its own for each counter, so that long names never overlap."""
    series: dict[str, dict[str, float]] = {}
    for r in rows:
        series.setdefault(str(r["name"]), {})[str(r["day"])] = float(r["total"] or 0)
    if not series:
        return ""
    days = sorted({d for s in series.values() for d in s})
    top = max(max(s.values()) for s in series.values()) or 1.0
    left, w, h = 60, 620, 200

    def x(day: str) -> int:  # the middle of the day's column: one day of data sits mid-chart
        return round(left + w * (days.index(day) + 0.5) / len(days))

    def y(v: float) -> int:
        return round(10 + h - v / top * h)

    out = [f'<svg class="chart" width="{left + w + 20}" height="{h + 40 + 16 * len(series)}" role="img" '
           f'aria-label="ECC and remapped rows per day">',
           f'<line x1="{left}" y1="{10 + h}" x2="{left + w}" y2="{10 + h}" stroke="#999"/>',
           f'<text x="{left - 6}" y="{14 + h}" font-size="11" text-anchor="end">0</text>',
           f'<text x="{left - 6}" y="14" font-size="11" text-anchor="end">{_number(top)}</text>']  # fmt: skip
    out += [f'<text x="{x(d)}" y="{h + 26}" font-size="11" text-anchor="middle">{d[5:]}</text>' for d in days]
    for n, (name, pts) in enumerate(sorted(series.items())):
        colour, points = TREND_COLOURS[n % len(TREND_COLOURS)], [(x(d), y(v)) for d, v in sorted(pts.items())]
        if len(points) > 1:
            xy = " ".join(f"{px},{py}" for px, py in points)
            out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{xy}"/>')
        out += [f'<circle cx="{px}" cy="{py}" r="3" fill="{colour}"/>' for px, py in points]
        ly = h + 46 + 16 * n
        out.append(f'<rect x="{left}" y="{ly - 9}" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{left + 14}" y="{ly}" font-size="11">{html.escape(name)}</text>')  # fmt: skip
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
            parts.append(_bars(s.rows, CHARTS[s.key]))
        elif s.key == "ecc_trend":
            parts.append(_trend(s.rows))
        parts.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in s.columns) + "</tr>")
        for r in s.rows:
            parts.append("<tr>" + "".join(_html_cell(c, r[c]) for c in s.columns) + "</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
