"""gpuctl report weekly on a generated week: every section's figures against the generator's truth."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sinks.generate import H100, expected, expected_fresh
from sinks.report import week_bounds
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


def test_a_week_in_progress_counts_only_the_gpu_hours_observed(tmp_path: Path) -> None:
    """gpuhealth started two minutes ago: MTBF is over 8 GPUs x 2 minutes, not 8 GPUs x the whole week."""
    _, _, week = week_bounds("this")
    since = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=2)
    url = f"chdb://{tmp_path / 'clickhouse'}"
    g = subprocess.run([sys.executable, "-m", "sinks.generate", url, "--week", week, "--fresh-since", since.isoformat()],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert g.returncode == 0, g.stderr
    before = dt.datetime.now(dt.UTC)
    r = gpuctl("report", "weekly", "--clickhouse", url, "--week", week, "--format", "json", timeout=120)
    after = dt.datetime.now(dt.UTC)
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)["sections"]["mtbf"]
    low, high = expected_fresh(since, week, before)["mtbf"][H100], expected_fresh(since, week, after)["mtbf"][H100]
    assert (row["model"], row["gpus"], row["failures"]) == (H100, low[0], low[2])
    assert low[1] <= row["gpu_hours"] <= high[1]  # the query's now lies between before and after
    assert row["mtbf_hours"] is None if not low[2] else low[3] <= row["mtbf_hours"] <= high[3]


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


def test_markdown_and_text_and_clear_errors(store: str) -> None:
    md = report(store, "--format", "md")
    assert md.returncode == 0 and "## Top GPUs" in md.stdout and "| GPU-node-a-2 |" in md.stdout
    text = report(store)
    assert text.returncode == 0 and "S-MOVER" in text.stdout and "1096.0" in text.stdout
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
