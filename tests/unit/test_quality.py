"""House rules that a reviewer would otherwise have to remember."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

PY = sys.executable


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_ruff_is_clean() -> None:
    r = run(PY, "-m", "ruff", "check", ".")
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(PY, "-m", "ruff", "format", "--check", ".")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_is_clean() -> None:
    r = run(PY, "-m", "mypy")
    assert r.returncode == 0, r.stdout + r.stderr


def test_ci_runs_the_readme_test_command() -> None:
    readme = (REPO / "README.md").read_text()
    commands = re.findall(r"## Set up on a fresh machine.*?```sh\n(.*?)\n```.*?```sh\n(.*?)\n```", readme, re.S)[0]
    assert len(commands) == 2, "the README's first screen has exactly two set-up commands"
    test_command = commands[1]
    assert "pytest" in test_command
    assert test_command in (REPO / ".ci" / "run").read_text()


HEAVY = {"chdb", "pandas", "pyarrow", "clickhouse_connect", "sqlglot", "typer", "pydantic", "rich", "click"}


def test_the_agent_process_holds_no_storage_engine_or_cli_framework() -> None:
    code = "import sys, producers.agent; print(sorted({m.split('.')[0] for m in sys.modules}))"
    r = run(PY, "-c", code)
    assert r.returncode == 0, r.stderr
    loaded = set(eval(r.stdout))
    assert loaded & HEAVY == set()


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("gpuhealth", ("producers", "responder", "rules", "sinks", "gpuctl")),
        ("producers", ("responder", "rules", "sinks", "gpuctl")),
        ("responder", ("producers", "rules", "sinks", "gpuctl")),
        ("rules", ("producers", "responder", "sinks", "gpuctl")),
        ("sinks", ("producers", "responder", "rules", "gpuctl")),
    ],
)
def test_stages_meet_only_through_gpuhealth(package: str, forbidden: tuple[str, ...]) -> None:
    """The contract imports no stage, the stages import no other stage and no stage imports gpuctl:
    only gpuctl wires them together."""
    pattern = re.compile(rf"^\s*(from|import)\s+({'|'.join(forbidden)})(\.|\s|$)", re.M)
    offenders = [str(p.relative_to(REPO)) for p in (REPO / package).rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


# The contract's public names: adding one is a decision, so it is made here too.
CONTRACT = {
    "SCHEMA_VERSION", "CheckResult", "ConfigError", "DeadLetter", "EmbeddedServerError", "Event", "GpuInfo",
    "GpuProcess", "GpuhealthError", "Health", "HealthState", "HostEvent", "Incident", "Inventory", "KernelEvent",
    "MetricBatch", "NotRunningError", "NvlinkDetail", "NvmlEvent", "PermissionDeniedError", "QueryError",
    "QueryRefused", "RepairAction", "SetHealthy", "SourceError", "SourceStatus", "Verification", "encode",
}  # fmt: skip


def test_the_contract_exports_its_public_names_and_nothing_else() -> None:
    code = "import gpuhealth, json; print(json.dumps([gpuhealth.__all__, [n for n in gpuhealth.__all__ if not hasattr(gpuhealth, n)]]))"
    r = run(PY, "-c", code)
    assert r.returncode == 0, r.stderr
    exported, missing = json.loads(r.stdout)
    assert set(exported) == CONTRACT and len(exported) == len(CONTRACT)
    assert missing == []


PRODUCT = ("gpuctl", "gpuhealth", "producers", "rules", "sinks")


def test_no_function_in_the_product_is_over_60_lines() -> None:
    import ast

    long = []
    for package in PRODUCT:
        for path in (REPO / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                is_function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                if is_function and (node.end_lineno or 0) - node.lineno + 1 > 60:
                    long.append(f"{path.relative_to(REPO)}:{node.name}")
    assert long == []


def test_every_module_in_the_product_is_under_400_lines() -> None:
    sizes = {
        str(p.relative_to(REPO)): len(p.read_text().splitlines()) for d in PRODUCT for p in (REPO / d).rglob("*.py")
    }
    assert {p: n for p, n in sizes.items() if n > 400} == {}
