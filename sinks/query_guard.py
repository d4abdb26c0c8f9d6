"""Which SQL the query path runs: one parse with sqlglot's ClickHouse dialect, then an allowlist.

Accepted, as one statement:

    SELECT …  (WITH, UNION/EXCEPT/INTERSECT, joins, subqueries, {name:Type} parameters)
    EXPLAIN [AST|SYNTAX|PLAN|PIPELINE|ESTIMATE|QUERY TREE] SELECT …
    DESCRIBE [TABLE] table          SHOW TABLES [LIKE '…']          SHOW CREATE [TABLE] table

where every table is one of the gpuhealth database's (an unqualified name means it), one of
SYSTEM_TABLES, or one of TABLE_FUNCTIONS, which make rows up and read nothing. Anything else is
refused with a one-line reason: writes, SET, SETTINGS, FORMAT, INTO OUTFILE, other databases,
every other system table and table function (file, url, s3, remote, …: unknown means refused),
the functions in SCALAR_OUTSIDE that reach files, dictionaries or other tables by name, `IN name`
and the functional forms of IN (ClickHouse reads a table of that name), parameters typed
Identifier, several statements, and what sqlglot cannot parse.

The engine enforces readonly and the limits (sinks/reads.py), but readonly does not stop
`SELECT file('/etc/shadow')` or `INTO OUTFILE` in chDB: this gate is what keeps a query inside
gpuhealth's tables. Where sqlglot and ClickHouse might read the text differently, the query is
refused: non-ASCII outside string literals and quoted names (ClickHouse takes Unicode quotation
marks as quotes), control characters, heredoc strings, comments inside comments.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.dialects.clickhouse import ClickHouse
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from gpuhealth.errors import QueryRefused

TABLE_FUNCTIONS = frozenset({"numbers", "numbers_mt", "zeros", "zeros_mt"})
# Made up or the engine's own: none says anything of another database (system.tables would).
SYSTEM_TABLES = frozenset(
    {"one", "numbers", "numbers_mt", "zeros", "zeros_mt", "functions", "data_type_families", "time_zones"}
)
# The functional forms of IN, whose second argument may name a table: the operator, with a list or
# a subquery, says the same.
IN_FUNCTIONS = frozenset(
    f"{prefix}{name}{suffix}".lower()
    for prefix in ("", "global")
    for name in ("In", "NotIn", "NullIn", "NotNullIn")
    for suffix in ("", "IgnoreSet")
)

# Functions that read a file, a dictionary or a table named in a string, or the host's internals:
# refused wherever the word appears, so that no syntax sqlglot does not model (APPLY(file), a
# lambda) lets one in.
SCALAR_OUTSIDE = frozenset(
    name.lower()
    for name in (
        "file",
        "joinGet",
        "joinGetOrNull",
        "catboostEvaluate",
        "naiveBayesClassifier",
        "showCertificate",
        "generateSerialID",
        "hasColumnInTable",
        "getClientHTTPHeader",
        "addressToLine",
        "addressToLineWithInlines",
        "addressToSymbol",
        "demangle",
        "dictGet",
        "dictHas",
        "dictIsIn",
    )
)
SCALAR_OUTSIDE_FAMILIES = ("dictget", "naivebayesclassifier")  # dictGetString, naiveBayesClassifierWithProb, …
# Table functions over files, URLs, object stores, other servers and databases: TABLE_FUNCTIONS is
# an allowlist already; these are also refused as words before '(' wherever sqlglot puts them.
TABLE_OUTSIDE = frozenset(
    name.lower()
    for name in (
        "fileCluster",
        "url",
        "urlCluster",
        "s3",
        "s3Cluster",
        "gcs",
        "oss",
        "cosn",
        "hdfs",
        "hdfsCluster",
        "azureBlobStorage",
        "azureBlobStorageCluster",
        "iceberg",
        "icebergS3",
        "icebergAzure",
        "icebergHDFS",
        "icebergLocal",
        "deltaLake",
        "deltaLakeCluster",
        "hudi",
        "hudiCluster",
        "remote",
        "remoteSecure",
        "cluster",
        "clusterAllReplicas",
        "executable",
        "executablePool",
        "input",
        "mysql",
        "postgresql",
        "jdbc",
        "odbc",
        "sqlite",
        "mongodb",
        "redis",
        "arrowFlight",
        "ytsaurus",
        "zookeeper",
        "dictionary",
        "merge",
        "loop",
        "view",
        "viewIfPermitted",
        "prometheusQuery",
        "prometheusQueryRange",
        "timeSeriesData",
        "mergeTreeIndex",
        "mergeTreeProjection",
    )
)
EXPLAIN_KINDS = frozenset({"AST", "SYNTAX", "PLAN", "PIPELINE", "ESTIMATE"})
_DIALECT = ClickHouse()
_LITERALS = {
    TokenType.STRING,
    TokenType.NATIONAL_STRING,
    TokenType.RAW_STRING,
    TokenType.BYTE_STRING,
    TokenType.BIT_STRING,
    TokenType.HEX_STRING,
}
_WRITES = (exp.DDL, exp.DML, exp.Command, exp.Set, exp.Into, exp.Use)


def _refuse(reason: str) -> QueryRefused:
    return QueryRefused(f"refused: {reason}")


def check(sql: str, database: str = "gpuhealth") -> str:
    """The query to run (trailing ';' dropped, CRLF made LF), or QueryRefused saying why not."""
    sql = sql.replace("\r\n", "\n")
    if bad := next((c for c in sql if (ord(c) < 32 and c not in "\n\t") or ord(c) == 127), None):
        raise _refuse(f"control character U+{ord(bad):04X} in the query")
    tokens = _tokens(sql)
    if tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        sql, tokens = sql[: tokens[-1].start], tokens[:-1]
    if not tokens:
        raise _refuse("the query is empty")
    _check_words(tokens)
    first = tokens[0].text.upper()
    if first in ("EXPLAIN", "SHOW"):
        if len(tokens) != 2 or tokens[1].token_type != TokenType.STRING:
            raise _refuse(f"{first} takes one statement")
        if first == "EXPLAIN":
            _check_explain(tokens[1].text, database)
        else:
            _check_show(tokens[1].text, database)
        return sql
    _check_statement(_parse(sql), database)
    return sql


# ---------------------------------------------------------------- lexical checks


def _tokens(sql: str) -> list[Token]:
    try:
        return list(_DIALECT.tokenize(sql))
    except TokenError as e:
        raise _refuse(f"not understood as ClickHouse SQL: {_first_line(str(e))}") from None


def _check_words(tokens: list[Token]) -> None:
    for i, t in enumerate(tokens):
        for comment in t.comments:
            if "/*" in comment or "*/" in comment:
                raise _refuse("a comment inside a comment")
        if t.token_type == TokenType.HEREDOC_STRING:
            raise _refuse("heredoc strings ($$…$$): use '…'")
        if t.token_type in _LITERALS:
            continue
        if not t.text.isascii() and t.token_type != TokenType.IDENTIFIER:  # "…" and `…` quote alike in both
            raise _refuse(f'non-ASCII outside a string literal ({t.text!r}): quote names with ` or "')
        word = t.text.lower()
        if word in ("outfile", "infile"):
            raise _refuse(f"INTO {t.text.upper()} reads or writes a file on the sink's host")
        called = i + 1 < len(tokens) and tokens[i + 1].token_type == TokenType.L_PAREN
        if called and word in IN_FUNCTIONS and t.token_type != TokenType.IN:  # `in`(x, t) or notIn(x, t)
            raise _refuse(f"{t.text}(): write x IN (…) with a list or a subquery")
        if word in SCALAR_OUTSIDE or word.startswith(SCALAR_OUTSIDE_FAMILIES) or (called and word in TABLE_OUTSIDE):
            raise _refuse(f"{t.text} reaches outside gpuhealth's tables (files, network, other databases)")


def _first_line(text: str) -> str:
    return " ".join(text.replace("\x1b[4m", "").replace("\x1b[0m", "").split())[:200]


# ---------------------------------------------------------------- statements


def _parse(sql: str) -> exp.Expr:
    try:
        statements = [s for s in sqlglot.parse(sql, dialect=_DIALECT) if s is not None]
    except ParseError as e:
        err = e.errors[0] if e.errors else {}
        where = f" at line {err.get('line')}, column {err.get('col')}" if err else ""
        why = err.get("description", _first_line(str(e)))
        raise _refuse(f"not understood as ClickHouse SQL{where}: {why}") from None
    except TokenError as e:
        raise _refuse(f"not understood as ClickHouse SQL: {_first_line(str(e))}") from None
    if len(statements) != 1:
        raise _refuse(f"{len(statements)} statements: send one at a time")
    return statements[0]


def _check_statement(stmt: exp.Expr, database: str) -> None:
    if isinstance(stmt, exp.Describe):
        if not isinstance(stmt.this, exp.Table) or stmt.this.args.get("expressions"):
            raise _refuse("DESCRIBE takes one table name")
        _check_table(stmt.this, database)
        return
    if not isinstance(stmt, exp.Query):
        raise _refuse(f"{_kind(stmt)} is not a read: only SELECT, EXPLAIN, DESCRIBE and SHOW run here")
    for node in stmt.walk():
        if isinstance(node, _WRITES):
            raise _refuse(f"{_kind(node)} inside a query")
        if node.args.get("settings"):
            raise _refuse("SETTINGS: the query path sets its own limits")
        if node.args.get("format"):
            raise _refuse("FORMAT: gpuctl chooses the output format")
        if isinstance(node, exp.Table):
            _check_table(node, database)
        elif isinstance(node, exp.In) and _names_a_table(node):
            raise _refuse("IN <name> may read a table by that name: write IN (SELECT … FROM table)")
        elif isinstance(node, exp.Placeholder) and str(node.args.get("kind")).lower() == "identifier":
            raise _refuse(f"{{{node.name}:Identifier}}: a parameter may not name a table or a column")
        elif isinstance(node, (exp.Join, exp.From)):
            _check_source(node)


def _names_a_table(node: exp.In) -> bool:
    """x IN t and x IN (t): ClickHouse reads t as a table when one has that name."""
    if node.args.get("field") is not None:
        return True
    listed = node.expressions
    return len(listed) == 1 and isinstance(listed[0], (exp.Column, exp.Identifier, exp.Dot))


def _check_source(node: exp.Join | exp.From) -> None:
    if isinstance(node, exp.Join) and node.args.get("kind") == "ARRAY":
        return  # ARRAY JOIN unfolds arrays of the rows already read
    source = node.this
    while isinstance(source, (exp.Alias, exp.Final)):  # FROM t AS x FINAL
        source = source.this
    if not isinstance(source, (exp.Table, exp.Subquery, exp.Values)):
        raise _refuse(f"{_kind(source)} is not a table or a subquery")


def _check_table(table: exp.Table, database: str) -> None:
    name = table.this
    if isinstance(name, exp.Identifier):
        if table.args.get("catalog") is not None:
            raise _refuse(f"{table.sql(dialect=_DIALECT)}: a table is database.table at most")
        if table.db in ("", database) or (table.db == "system" and table.name in SYSTEM_TABLES):
            return
        raise _refuse(f"{table.db}.{table.name}: only the {database} database's tables are read here")
    if isinstance(name, exp.Anonymous) and name.name in TABLE_FUNCTIONS:
        return
    if isinstance(name, exp.Placeholder):
        raise _refuse(f"{{{name.name}:{name.args.get('kind')}}}: a parameter may not name a table")
    raise _refuse(f"table function {_kind(name)}: only {', '.join(sorted(TABLE_FUNCTIONS))} are allowed")


def _kind(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return f"{node.name}()"
    if isinstance(node, exp.Func):
        return f"{node.sql_name()}()"
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    return node.key.upper()


# ---------------------------------------------------------------- EXPLAIN and SHOW, which sqlglot leaves unparsed


def _check_explain(rest: str, database: str) -> None:
    tokens = _tokens(rest)
    _check_words(tokens)
    skip = 0
    if tokens and tokens[0].text.upper() in EXPLAIN_KINDS:
        skip = 1
    elif len(tokens) > 1 and [t.text.upper() for t in tokens[:2]] == ["QUERY", "TREE"]:
        skip = 2
    if skip >= len(tokens) or tokens[skip].token_type not in (TokenType.SELECT, TokenType.WITH, TokenType.L_PAREN):
        raise _refuse("EXPLAIN takes an optional kind (AST, SYNTAX, PLAN, PIPELINE, ESTIMATE) and a SELECT")
    _check_statement(_parse(rest[tokens[skip].start :]), database)


def _check_show(rest: str, database: str) -> None:
    tokens = _tokens(rest)
    _check_words(tokens)
    words = [t.text.upper() for t in tokens]
    if words == ["TABLES"] or (
        words[:2] == ["TABLES", "LIKE"] and len(tokens) == 3 and tokens[2].token_type == TokenType.STRING
    ):
        return
    # CREATE TABLE t or db.t only: SHOW CREATE DATABASE, USER, ROLE, … show what is not gpuhealth's tables.
    if words[:2] == ["CREATE", "TABLE"] and len(tokens) in (3, 5):
        table = _parse(f"DESCRIBE TABLE {rest[tokens[2].start :]}")
        if isinstance(table, exp.Describe) and isinstance(table.this, exp.Table) and not table.this.alias:
            _check_statement(table, database)
            return
    raise _refuse("SHOW runs as SHOW TABLES [LIKE '…'] or SHOW CREATE TABLE <table>")
