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

# Mutation testing (not CI): mutants of rules/, producers/klog.py, producers/kernel.py and
# sinks/clickhouse.py against their fast tests ([tool.mutmut] in pyproject.toml), from scratch;
# MUTANTS (mutmut's names or globs, e.g. 'rules.boots.*') runs only those. The last line is one JSON
# object, as a bench's; `.venv-mutate/bin/mutmut results` lists the survivors, `mutmut show NAME` each one.
# mutants/ is on PYTHONPATH before mutmut fills it: a subprocess of a test (gpuctl) runs the mutant
# too, and a path missing when Python starts is never searched.
mutate *MUTANTS:
    test -x .venv-mutate/bin/python || python3 -m venv .venv-mutate
    .venv-mutate/bin/pip install -q -e '.[embedded,mutate]'  # each run: a dependency added since the venv was made
    rm -rf mutants
    mkdir mutants
    PYTHONPATH="$PWD/mutants" GPUHEALTH_SHARED="$(cd .. && pwd)/shared" .venv-mutate/bin/mutmut run --max-children 2 \
        {{MUTANTS}} | tr '\r' '\n' | grep -v '^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]'
    .venv-mutate/bin/mutmut results --all true | .venv-mutate/bin/python -c 'import collections, fnmatch, json, sys; \
        pats = sys.argv[1:] or ["*"]; rows = [x.strip().rsplit(": ", 1) for x in sys.stdin if ": " in x]; \
        c = collections.Counter(s for n, s in rows if any(fnmatch.fnmatch(n, p) for p in pats)); \
        n = sum(c.values()); done = n - c["not checked"]; \
        print(json.dumps({"mutants": n, "killed": c["killed"], "survived": c["survived"], "no_tests": c["no tests"], \
        "timeout": c["timeout"], "not_checked": c["not checked"], \
        "kill_rate": round(c["killed"] / done, 4) if done else 0.0}))' {{MUTANTS}}
