"""Run every bench and write bench/RESULTS.md: the machine, the date, the commit, every figure.

    python bench/run.py [BENCH ...]      (default: every bench/*.py but this one)

Each bench prints its figures as one JSON object on its last line; this keeps
the previous results of a bench that is not run this time, and the hand-written
section from KEPT on (before/after figures of optimisations) as it is.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
RESULTS = HERE / "RESULTS.md"
KEPT = "## Before and after"


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    python = platform.python_version()
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu}), {mem_gib:.0f} GiB, Python {python}"
    )


def commit() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, cwd=HERE).stdout
    except OSError:
        return "unknown"
    return sha.strip() + (" (with uncommitted changes)" if dirty.strip() else "")


def previous() -> dict[str, dict[str, object]]:
    if not RESULTS.exists():
        return {}
    for line in RESULTS.read_text().splitlines():
        if line.startswith("<!-- results: "):
            loaded: dict[str, dict[str, object]] = json.loads(line.removeprefix("<!-- results: ").removesuffix(" -->"))
            return loaded
    return {}


def kept() -> list[str]:
    """The hand-written section, up to the results line."""
    if not RESULTS.exists():
        return []
    text = RESULTS.read_text()
    start = text.find(f"\n{KEPT}")
    if start < 0:
        return []
    section = text[start + 1 :].split("\n<!-- results: ")[0].rstrip("\n")
    return [*section.splitlines(), ""]


def main(names: list[str]) -> int:
    benches = [HERE / n for n in names] if names else sorted(p for p in HERE.glob("*.py") if p.name != "run.py")
    results = previous()
    failed = []
    for bench in benches:
        print(f"== {bench.name}", flush=True)
        r = subprocess.run([sys.executable, str(bench)], capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        lines = r.stdout.strip().splitlines()
        try:
            figures = json.loads(lines[-1]) if r.returncode == 0 and lines else None
        except json.JSONDecodeError:
            figures = None
        if figures is None:
            failed.append(bench.name)
            sys.stderr.write(r.stderr[-2000:])
            continue
        figures["_when"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        figures["_commit"] = commit()
        figures["_machine"] = machine()
        results[bench.name] = figures
    lines = [
        "# Bench results",
        "",
        "Written by `just bench` (bench/run.py); every figure below was measured in one run",
        "of its bench, ratios against the building blocks measured in the same run.",
        "",
    ]
    for name, figures in sorted(results.items()):
        when, sha, host = figures["_when"], figures["_commit"], figures["_machine"]
        lines += [f"## {name}", "", f"{when}, commit {sha}", "", str(host), "", "| figure | value |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in figures.items() if not k.startswith("_")]
        lines.append("")
    lines += kept()
    lines.append(f"<!-- results: {json.dumps(results)} -->")
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
