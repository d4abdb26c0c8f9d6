"""gpuctl sql as users expect it: gpuhealth's tables by their plain names, a comment first if they like, through
the running sink or straight at the store; and each probe that once ran as root refused in one line."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.e2e.conftest import gpuctl, running


def test_sql_reads_gpuhealth_and_refuses_the_rest_in_one_line(tmp_path: Path) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("root:s3cr3t-hash:19000:0:99999:7:::\n")
    written = [tmp_path / "cron-x", tmp_path / "outfile"]
    trap = socket.create_server(("127.0.0.1", 0))  # where url(), s3() and remote() would connect
    port = trap.getsockname()[1]
    probes = [
        f"SELECT * FROM file('{secret}', 'LineAsString')",
        f"SELECT * FROM url('http://127.0.0.1:{port}/latest/meta-data', 'LineAsString')",
        f"SELECT * FROM s3('http://127.0.0.1:{port}/bucket/key.csv', 'CSV')",
        f"SELECT * FROM remote('127.0.0.1:{port}', system.one)",
        f"SELECT 'x' INTO OUTFILE '{written[1]}'",
        f"INSERT INTO FUNCTION file('{written[0]}', 'RawBLOB') SELECT '* * * * * root id'",
    ]
    with running(tmp_path) as up:
        data = str(up.data_dir)
        r = gpuctl("sql", "SELECT count() AS n FROM events", "--data-dir", data, "--json")
        assert r.returncode == 0 and isinstance(json.loads(r.stdout)[0]["n"], int), r.stderr
        r = gpuctl("sql", "-- tables first\nSHOW TABLES", "--data-dir", data)
        assert r.returncode == 0 and "events" in r.stdout.split(), r.stderr
        for sql in probes:
            r = gpuctl("sql", sql, "--data-dir", data)
            assert r.returncode == 65 and r.stdout == "", (sql, r.stdout)
            assert r.stderr.startswith("gpuctl: refused: ") and r.stderr.count("\n") == 1, (sql, r.stderr)
            assert "s3cr3t" not in r.stderr
    store = f"chdb://{up.data_dir / 'clickhouse'}"  # the stack is down: the store read in place
    r = gpuctl("sql", "--clickhouse", store, "--json", "/* plain names */ SELECT count() AS n FROM events")
    assert r.returncode == 0 and isinstance(json.loads(r.stdout)[0]["n"], int), r.stderr
    r = gpuctl("sql", "--clickhouse", store, probes[0])
    assert r.returncode == 65 and r.stderr.startswith("gpuctl: refused: file reaches outside")
    trap.settimeout(0.5)
    try:
        conn, _ = trap.accept()
        conn.close()
        raise AssertionError("something connected to the trap port")
    except TimeoutError:
        pass
    finally:
        trap.close()
    assert not any(p.exists() for p in written)


def test_each_answer_belongs_to_its_query_after_a_large_one(tmp_path: Path) -> None:
    """Issue #20's sequence: a query over far more rows than a reply holds, then small ones; each gets its
    own answer, at once (once: the previous query's rows, or a 30 s wait and a failure)."""
    with running(tmp_path) as up:
        data = str(up.data_dir)
        big = gpuctl("sql", "SELECT number FROM numbers(100000)", "--data-dir", data, "--json", timeout=60)
        assert big.returncode == 65 and "100000" not in big.stdout, big.stdout[:200]  # over the 10,000 rows asked
        assert big.stderr.startswith("gpuctl: ") and big.stderr.count("\n") == 1, big.stderr
        for word in ("after", "and again", "once more"):
            r = gpuctl("sql", f"SELECT '{word}' AS w", "--data-dir", data, "--json", timeout=20)
            assert r.returncode == 0, r.stderr
            assert json.loads(r.stdout) == [{"w": word}]
        r = gpuctl("sql", "SELECT number FROM numbers(10000) ORDER BY number", "--data-dir", data, "--json")
        assert r.returncode == 0, r.stderr
        assert [row["number"] for row in json.loads(r.stdout)] == list(range(10000))
        r = gpuctl("sql", "SELECT 1 AS one", "--data-dir", data, "--json", timeout=20)
        assert json.loads(r.stdout) == [{"one": 1}], r.stdout
