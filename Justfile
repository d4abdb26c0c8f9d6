# gpuhealth recipes. `pip install rust-just` gives `just`.
set shell := ["bash", "-euo", "pipefail", "-c"]

py := ".venv/bin/python"

default: test

# Create .venv with everything the tests need.
install:
    test -x {{py}} || python3 -m venv .venv
    .venv/bin/pip install -q -e '.[embedded,test]'

# Every stage on this node, embedded NATS and ClickHouse.
up *ARGS: install
    .venv/bin/gpuctl up {{ARGS}}

# The README's test command.
test *ARGS: install
    {{py}} -m pytest {{ARGS}}

lint: install
    .venv/bin/ruff check .
    .venv/bin/ruff format --check .
    .venv/bin/mypy

fmt: install
    .venv/bin/ruff format .
    .venv/bin/ruff check --fix .

# Benchmarks: each prints one JSON object on its last line; bench/RESULTS.md gets them all.
bench *NAMES: install
    {{py}} bench/run.py {{NAMES}}

# Rebuild rules/catalogs/*.tsv from the reference tables.
catalogs REF="../shared/reference":
    {{py}} -m rules.catalogs.generate {{REF}}

schema:
    .venv/bin/gpuctl schema --out gpuhealth/schema/wire.schema.json

# Mutation testing (not CI): mutants of rules/, producers/klog.py, producers/kernel.py and
# sinks/clickhouse.py against their fast tests ([tool.mutmut] in pyproject.toml), from scratch.
# The last line is one JSON object, as a bench's; `.venv/bin/mutmut results` lists the survivors.
mutate: install
    test -x .venv/bin/mutmut || .venv/bin/pip install -q -e '.[embedded,test,mutate]'
    rm -rf mutants
    # On PYTHONPATH before mutmut fills it: a subprocess of a test (gpuctl) runs the mutant too, and a
    # path missing when Python starts is never searched.
    mkdir mutants
    PYTHONPATH="$PWD/mutants" GPUHEALTH_SHARED="$(cd .. && pwd)/shared" .venv/bin/mutmut run --max-children 2 \
        | tr '\r' '\n' | grep -v '^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]'
    .venv/bin/mutmut export-cicd-stats > /dev/null
    {{py}} -c 'import json; s = json.load(open("mutants/mutmut-cicd-stats.json")); \
        n = s["total"]; print(json.dumps({"mutants": n, "killed": s["killed"], "survived": s["survived"], \
        "no_tests": s["no_tests"], "timeout": s["timeout"], "suspicious": s["suspicious"], \
        "kill_rate": round(s["killed"] / n, 4) if n else 0.0}))'
