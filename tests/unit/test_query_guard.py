"""The query path's gate: every query gpuctl sends passes; every probe that reaches outside gpuhealth's tables,
writes, or loosens a limit is refused with one line saying why."""

from __future__ import annotations

from importlib import resources

import pytest

from gpuctl.read import EVENTS_SQL, INCIDENTS_SQL
from gpuhealth.errors import QueryError, QueryRefused
from sinks.query_guard import check


def shipped_queries() -> list[tuple[str, str]]:
    out = [("EVENTS_SQL", EVENTS_SQL), ("INCIDENTS_SQL", INCIDENTS_SQL)]
    root = resources.files("sinks").joinpath("queries")
    for folder in sorted(root.iterdir(), key=lambda f: f.name):
        for f in sorted(folder.iterdir(), key=lambda f: f.name):
            if f.name.endswith(".sql"):
                out.append((f"{folder.name}/{f.name}", f.read_text()))
    return out


SHIPPED = shipped_queries()


def test_every_report_query_file_is_in_the_list() -> None:
    assert len([n for n, _ in SHIPPED if "/" in n]) >= 12  # weekly 8, inventory 4: a new folder is picked up too


@pytest.mark.parametrize(("name", "sql"), SHIPPED, ids=[n for n, _ in SHIPPED])
def test_the_queries_gpuctl_sends_pass(name: str, sql: str) -> None:
    assert check(sql) == sql


ACCEPTED = [
    "SELECT count() FROM events",
    "-- how many\nSELECT count() FROM events",
    "/* a comment first */ SELECT node, count() FROM gpuhealth.events GROUP BY node",
    "SELECT * FROM events AS e FINAL WHERE e.xid IN (SELECT xid FROM incidents) LIMIT 5",
    "WITH recent AS (SELECT * FROM events WHERE time > now() - INTERVAL 1 HOUR) SELECT count() FROM recent",
    "SELECT 1 UNION ALL SELECT 2",
    "SELECT count() FROM numbers(1e12)",
    "SELECT name FROM system.functions WHERE name LIKE 'array%'",
    "SELECT 7 IN (1, 2), 7 IN (SELECT xid FROM events), xid IN (xid, 8) FROM events",
    "SELECT arrayMap(x -> x * 2, [1, 2, 3])",
    "SELECT * FROM events ARRAY JOIN [1, 2] AS n LIMIT 1",
    "SELECT message FROM events WHERE message LIKE '%file(%' AND node = {node:String}",
    "EXPLAIN SELECT count() FROM events",
    "EXPLAIN PIPELINE SELECT count() FROM events",
    "EXPLAIN QUERY TREE SELECT 1",
    "DESCRIBE events",
    "DESC TABLE gpuhealth.incidents",
    "SHOW TABLES",
    "SHOW TABLES LIKE 'metrics%'",
    "SHOW CREATE TABLE events",
    "SHOW CREATE TABLE gpuhealth.metrics_hourly",
    "SELECT 'wrote to \u2018file\u2019' AS \"café\"",  # non-ASCII inside a string literal or a quoted name is data
]


@pytest.mark.parametrize("sql", ACCEPTED)
def test_reads_of_gpuhealth_pass(sql: str) -> None:
    check(sql)


def test_a_trailing_semicolon_and_crlf_are_tidied_not_refused() -> None:
    assert check("SELECT 1;\r\n") == "SELECT 1"
    assert check("SELECT 1\r\nFROM events") == "SELECT 1\nFROM events"


REFUSED = [
    ("SELECT * FROM file('/etc/shadow', 'LineAsString')", "file reaches outside"),
    ("SELECT file('/etc/shadow')", "file reaches outside"),
    ("SELECT `file`('/etc/shadow')", "file reaches outside"),
    ("SELECT COLUMNS('x') APPLY(file) FROM (SELECT '/etc/shadow' AS x)", "file reaches outside"),
    ("SELECT arrayMap(p -> file(p), ['/etc/shadow'])", "file reaches outside"),
    ("SELECT “file”('/etc/shadow')", "non-ASCII"),
    ("SELECT * FROM url('http://169.254.169.254/latest/meta-data/', 'LineAsString')", "url reaches outside"),
    ("SELECT * FROM s3('https://bucket.s3.amazonaws.com/x.csv')", "s3 reaches outside"),
    ("SELECT * FROM remote('10.0.0.1:9000', system.one)", "remote reaches outside"),
    ("SELECT * FROM remoteSecure('10.0.0.1:9440', system.one)", "remoteSecure reaches outside"),
    ("SELECT * FROM cluster('default', system.one)", "cluster reaches outside"),
    ("SELECT * FROM executable('x.sh', 'TSV', 'a String')", "executable reaches outside"),
    ("SELECT * FROM mysql('h:3306', 'db', 't', 'u', 'p')", "mysql reaches outside"),
    ("SELECT * FROM postgresql('h:5432', 'db', 't', 'u', 'p')", "postgresql reaches outside"),
    ("SELECT * FROM jdbc('x', 'y')", "jdbc reaches outside"),
    ("SELECT * FROM hdfs('hdfs://h/x', 'TSV')", "hdfs reaches outside"),
    ("SELECT * FROM input('a String')", "input reaches outside"),
    ("SELECT * FROM generateRandom('a UInt8') LIMIT 1", "table function generateRandom"),
    ("SELECT * FROM someNewTableFunction(1)", "table function someNewTableFunction"),
    ("SELECT joinGet('other.t', 'v', 1)", "joinGet reaches outside"),
    ("SELECT dictGetString('d', 'v', 1)", "dictGetString reaches outside"),
    ("SELECT naiveBayesClassifierWithProb('m', 'x')", "naiveBayesClassifierWithProb reaches outside"),
    ("SELECT 1 INTO OUTFILE '/etc/cron.d/x'", "INTO OUTFILE"),
    ("INSERT INTO FUNCTION file('/etc/cron.d/x', 'RawBLOB') SELECT 'x'", "file reaches outside"),
    ("INSERT INTO events (id) VALUES ('x')", "INSERT is not a read"),
    ("DROP TABLE events", "not a read"),
    ("ALTER TABLE events DELETE WHERE 1", "not a read"),
    ("SET limit = 1", "not a read"),
    ("SET additional_table_filters = {'events': 'false'}", "not a read"),
    ("SELECT number FROM numbers(1.5e7) SETTINGS max_result_rows = 0", "SETTINGS"),
    ("SELECT 1 FORMAT JSON", "FORMAT"),
    ("SELECT 1; SELECT 2", "2 statements"),
    ("SELECT 1; DROP TABLE events", "2 statements"),
    ("SELECT * FROM system.processes", "system.processes"),
    ("SELECT * FROM system.query_log", "system.query_log"),
    ("SELECT * FROM other.secrets", "other.secrets"),
    ("SELECT * FROM a.b.c", "database.table at most"),
    ("SELECT 1 IN system.processes", "IN <name>"),
    ("SELECT 7 IN (other.s)", "IN <name>"),
    ("SELECT 7 GLOBAL NOT IN other.s", "IN <name>"),
    ("SELECT globalIn(7, other.s)", "globalIn(): write x IN"),
    ("SELECT notIn(7, other.s)", "notIn(): write x IN"),
    ("SELECT `in`(7, other.s)", "in(): write x IN"),
    ("SELECT create_table_query FROM system.tables", "system.tables"),
    ("SELECT * FROM {t:Identifier}", "may not name a table"),
    ("SELECT {c:Identifier} FROM events", "may not name a table or a column"),
    ("SELECT 1 /* /* */ , 2 -- */", "comment inside a comment"),
    ("SELECT $$x$$", "heredoc"),
    ("SELECT 1\x00", "control character"),
    ("SELECT FROM WHERE", "not understood"),
    ("", "empty"),
    ("-- only a comment", "empty"),
    ("EXPLAIN SELECT * FROM file('/etc/shadow')", "file reaches outside"),
    ("EXPLAIN SELECT * FROM other.t", "other.t"),
    ("EXPLAIN SELECT 1; DROP TABLE events", "takes one statement"),
    ("DESCRIBE TABLE file('/etc/shadow')", "file reaches outside"),
    ("DESCRIBE system.processes", "system.processes"),
    ("SHOW DATABASES", "SHOW runs as"),
    ("SHOW CREATE TABLE other.t", "other.t"),
    ("SHOW CREATE DATABASE other", "SHOW runs as"),
    ("SHOW CREATE USER", "SHOW runs as"),
    ("SHOW CREATE other.t", "SHOW runs as"),
    ("SHOW CREATE TABLE events AS x", "not understood"),
    ("OPTIMIZE TABLE events FINAL", "not a read"),
    ("KILL QUERY WHERE 1", "not"),
    ("SYSTEM SHUTDOWN", "not a read"),
]


@pytest.mark.parametrize(("sql", "why"), REFUSED, ids=[s[:50] for s, _ in REFUSED])
def test_everything_else_is_refused_with_one_line_saying_why(sql: str, why: str) -> None:
    with pytest.raises(QueryRefused) as e:
        check(sql)
    message = str(e.value)
    assert why in message and message.startswith("refused: ") and "\n" not in message
    assert isinstance(e.value, QueryError)  # the CLI and the sink report it as every query error


def test_the_database_is_the_one_configured() -> None:
    check("SELECT * FROM fleet_a.events", database="fleet_a")
    with pytest.raises(QueryRefused, match=r"gpuhealth\.events"):
        check("SELECT * FROM gpuhealth.events", database="fleet_a")
