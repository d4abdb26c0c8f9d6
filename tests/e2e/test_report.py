"""gpuctl report weekly on a generated week: every section's figures against the generator's truth."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sinks.generate import H100, expected, expected_fresh
from sinks.report import week_bounds
from tests.conftest import need
from tests.e2e.conftest import assert_shape, gpuctl

# The last complete week: raw metric samples older than the TTL (180 days) would not be kept.
START, END, WEEK = week_bounds(None)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"chdb://{tmp_path_factory.mktemp('week') / 'clickhouse'}"
    r = subprocess.run([sys.executable, "-m", "sinks.generate", url, "--week", WEEK], capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return url


def report(store: str, *args: str) -> subprocess.CompletedProcess[str]:
    return gpuctl("report", "weekly", "--clickhouse", store, "--week", WEEK, *args, timeout=120)


def test_every_section_has_the_generated_weeks_numbers(store: str) -> None:
    r = report(store, "--format", "json")
    assert r.returncode == 0, r.stderr
    got: dict[str, Any] = json.loads(r.stdout)
    assert_shape("report weekly", got)
    want = expected(WEEK)
    s = got["sections"]
    assert got["week"] == WEEK
    assert (got["start"], got["end"]) == (f"{START.date()}T00:00:00Z", f"{END.date()}T00:00:00Z")
    assert {r["node"]: {k: r[k] for k in ("unhealthy_s", "degraded_s", "unknown_s")} for r in s["availability"]} \
        == want["availability"]  # fmt: skip
    assert {(r["code"], r["gpu_model"]): (r["incidents"], r["occurrences"], r["entities"], r["nodes"])
            for r in s["incidents_by_code"]} == want["incidents_by_code"]  # fmt: skip
    assert [(r["node"], r["serious"], r["incidents"]) for r in s["top_nodes"]] == want["top_nodes"]
    top = s["top_gpus"][0]
    assert (top["gpu_uuid"], top["serial"], top["incidents"]) == want["top_gpu"]
    assert [(r["serial"], r["nodes"]) for r in s["followed_serial"]] == want["followed_serial"]
    assert {(r["event"], r["action"]): r["times"] for r in s["actions"]} == want["actions"]
    assert {(r["day"], r["name"]): (r["total"], r["gpus_with_any"]) for r in s["ecc_trend"]} == want["ecc_trend"]
    assert {r["model"]: (r["gpus"], r["gpu_hours"], r["failures"], r["mtbf_hours"]) for r in s["mtbf"]} == want["mtbf"]
    assert [(r["action"], r["outcome"], r["decisions"], r["nodes"]) for r in s["responder"]] == want["responder"]
    assert [(r["shared"], r["fault"], r["nodes"]) for r in s["common_causes"]] == want["common_causes"]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, dt.datetime]:
    """A fresh install in the week in progress (sinks.generate.generate_fresh): (store, week, started at)."""
    _, _, week = week_bounds("this")
    since = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(minutes=2)
    url = f"chdb://{tmp_path_factory.mktemp('fresh') / 'clickhouse'}"
    g = subprocess.run([sys.executable, "-m", "sinks.generate", url, "--week", week, "--fresh-since", since.isoformat()],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert g.returncode == 0, g.stderr
    return url, week, since


def test_a_week_in_progress_counts_only_the_gpu_hours_observed(fresh: tuple[str, str, dt.datetime]) -> None:
    """gpuhealth started two minutes ago: MTBF is over 8 GPUs x 2 minutes, not 8 GPUs x the whole week."""
    url, week, since = fresh
    before = dt.datetime.now(dt.UTC)
    r = gpuctl("report", "weekly", "--clickhouse", url, "--week", week, "--format", "json", timeout=120)
    after = dt.datetime.now(dt.UTC)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)["sections"]
    low, high = expected_fresh(since, week, before), expected_fresh(since, week, after)
    (row,) = s["mtbf"]
    want, most = low["mtbf"][H100], high["mtbf"][H100]
    assert (row["model"], row["gpus"], row["failures"]) == (H100, want[0], want[2])
    assert want[1] <= row["gpu_hours"] <= most[1]  # the query's now lies between before and after
    assert row["mtbf_hours"] is None if not want[2] else want[3] <= row["mtbf_hours"] <= most[3]
    assert [r["node"] for r in s["availability"]] == ["node-f"]
    assert int(low["availability"]["node-f"]) <= s["availability"][0]["unhealthy_s"] <= high["availability"]["node-f"]
    assert {(r["day"], r["name"]): (r["total"], r["gpus_with_any"]) for r in s["ecc_trend"]} == low["ecc_trend"]


def test_html_is_one_page_with_its_charts_and_no_network(store: str, tmp_path: Path) -> None:
    out = tmp_path / "week.html"
    r = report(store, "--format", "html", "--out", str(out))
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert page.count("<svg") >= 5 and "<polyline" in page  # bars per section, the ECC trend as lines
    assert "http://" not in page and "https://" not in page and "<script" not in page
    for title in ("Availability per node", "followed their serial", "Mean time between failures"):
        assert title in page


CHROMIUM = shutil.which("chromium")
# Injected into a copy of the page (which itself has no script): what a person would see, measured. Every chart
# with its visible marks, its texts outside it (clipped) or over each other or over a bar, the length of its
# bars in order, and its value labels; page errors, and any resource the page loaded.
PROBE = """<script>
const errors = [];
window.addEventListener("error", e => errors.push(String(e.message)));
document.addEventListener("DOMContentLoaded", () => {
  const inside = (b, box) => b.left >= box.left - 1 && b.right <= box.right + 1 && b.top >= box.top - 1
    && b.bottom <= box.bottom + 1;
  const meet = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const charts = [...document.querySelectorAll("svg.chart")].map(svg => {
    const box = svg.getBoundingClientRect();
    const marks = [...svg.querySelectorAll("rect, circle, polyline")].map(m => m.getBoundingClientRect())
      .filter(b => b.width > 0 && b.height > 0 && inside(b, box));
    const texts = [...svg.querySelectorAll("text")].map(t => t.getBoundingClientRect());
    const bars = [...svg.querySelectorAll("g.bar")].map(g => g.getBoundingClientRect());
    const over = texts.flatMap((a, i) => texts.slice(i + 1).concat(bars).filter(b => meet(a, b)));
    return {name: svg.getAttribute("aria-label"), marks: marks.length, over: over.length,
            clipped: texts.filter(b => !inside(b, box)).length, bars: bars.map(b => Math.round(b.width)),
            values: [...svg.querySelectorAll("text.value")].map(t => t.textContent)};
  });
  const resources = performance.getEntriesByType("resource").length;
  document.body.dataset.probe = JSON.stringify({charts, errors, resources});
});
</script>"""


def render_in_chromium(page: str, tmp_path: Path) -> dict[str, Any]:
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("<head>", "<head>" + PROBE, 1))
    assert CHROMIUM
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0"]  # fmt: skip
    r = subprocess.run([CHROMIUM, *flags, "--dump-dom", probed.as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    # Chromium logs the page's console here, SVG attribute errors included ("<rect> attribute width: …").
    assert [line for line in r.stderr.splitlines() if ":CONSOLE" in line] == []
    found = re.search(r'data-probe="([^"]*)"', r.stdout)
    assert found, r.stdout[-2000:]
    return dict(json.loads(html.unescape(found.group(1))))


@pytest.mark.parametrize("week", ["generated", "fresh"])
def test_html_renders_in_chromium_with_every_chart_drawn_and_legible(
    week: str, store: str, fresh: tuple[str, str, dt.datetime], tmp_path: Path
) -> None:
    """The whole week, and a fresh install with one day of data: every chart has marks, nothing clipped or
    overlapping, bars longest first, durations in the unit that fits, counts as integers."""
    need(CHROMIUM is not None, "chromium (Debian package chromium; deploy/test-deps.sh installs it)")
    url, label = (store, WEEK) if week == "generated" else fresh[:2]
    out = tmp_path / "week.html"
    r = gpuctl("report", "weekly", "--clickhouse", url, "--week", label, "--format", "html", "--out", str(out))
    assert r.returncode == 0, r.stderr
    probe = render_in_chromium(out.read_text(), tmp_path)
    assert (probe["errors"], probe["resources"]) == ([], 0)
    charts = {c["name"]: c for c in probe["charts"]}
    for c in charts.values():
        assert c["marks"] > 0 and c["clipped"] == 0 and c["over"] == 0, c
        assert c["bars"] == sorted(c["bars"], reverse=True), c
        assert not [v for v in c["values"] if re.fullmatch(r"[\d,]+\.0( \w+)?", v)], c  # 5, not 5.0
    assert set(charts) == {"time not Healthy", "incidents", "incidents by node", "repair actions", "MTBF",
                           "ECC and remapped rows per day"}  # fmt: skip
    if week == "generated":
        assert charts["time not Healthy"]["values"] == ["1 d", "10 h", "4 h"]  # node-c, node-b, node-a
        assert charts["incidents by node"]["values"] == ["2", "1", "1", "1"]
        assert charts["MTBF"]["values"] == ["45.7 d", "no failures"]  # 1,096 h for the H100s
    else:
        (unhealthy,) = charts["time not Healthy"]["values"]
        assert re.fullmatch(r"\d+ s|\d+(\.\d)? min", unhealthy), unhealthy  # about a minute, not "0.0"


def test_markdown_and_text_and_clear_errors(store: str) -> None:
    md = report(store, "--format", "md")
    assert md.returncode == 0 and "## Top GPUs" in md.stdout and "| GPU-node-a-2 |" in md.stdout
    text = report(store)
    assert text.returncode == 0 and "S-MOVER" in text.stdout
    assert re.search(r"^NVIDIA H100 80GB HBM3 +21 +3288 +3 +1096$", text.stdout, re.M), text.stdout  # not 1096.0
    bad = gpuctl("report", "weekly", "--clickhouse", store, "--week", "2026-47")
    assert bad.returncode == 64 and "ISO form" in bad.stderr and "Traceback" not in bad.stderr
    fmt = gpuctl("report", "weekly", "--clickhouse", store, "--format", "pdf")
    assert fmt.returncode == 64 and "unknown format" in fmt.stderr


def test_inventory_questions(store: str) -> None:
    want = expected(WEEK)

    def ask(question: str) -> list[dict[str, Any]]:
        r = gpuctl("inventory", question, "--clickhouse", store, "--json")
        assert r.returncode == 0, r.stderr
        return list(json.loads(r.stdout))

    assert {r["gpu_uuid"]: r["path"] for r in ask("multi-host")} == want["multi_host"]
    assert {r["gpu_uuid"]: r["clusters"] for r in ask("moved-clusters")} == want["moved_clusters"]
    assert {r["chassis_serial"]: r["gpus"] for r in ask("chassis")} == want["chassis"]
    per_day = ask("per-day")
    assert sum(r["gpus"] for r in per_day if r["cluster"] == "c2") == 1 and len(per_day) == 5
