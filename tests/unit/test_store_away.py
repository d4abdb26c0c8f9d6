"""Which insert failures make the sink hold its messages (ClickHouse or NATS away or busy) and which are the
message's own fault (retried alone, then dead-lettered): a wrong answer either loses faults or stalls a stage."""

from __future__ import annotations

import nats.errors
import pytest
from clickhouse_connect.driver.exceptions import DatabaseError, OperationalError

from sinks.clickhouse import one_line, store_away


def caused_by(cause: BaseException) -> RuntimeError:
    e = RuntimeError("insert failed")
    e.__cause__ = cause  # a driver wrapping the socket's or the server's error
    return e


@pytest.mark.parametrize(
    "error",
    [
        OperationalError("Error HTTPConnectionPool(host='ch', port=8123): Connection refused"),
        caused_by(OperationalError("Connection refused")),
        DatabaseError("Code: 252. DB::Exception: Too many parts (300). (TOO_MANY_PARTS)"),
        caused_by(DatabaseError("Code: 241. DB::Exception: (MEMORY_LIMIT_EXCEEDED)")),
        DatabaseError("HTTP driver received response code 503"),
        nats.errors.TimeoutError(),
    ],
)
def test_clickhouse_or_nats_away_or_busy_holds_the_messages(error: BaseException) -> None:
    assert store_away(error) is True


@pytest.mark.parametrize(
    "error",
    [
        DatabaseError("Code: 53. DB::Exception: Type mismatch in IN or VALUES section. (TYPE_MISMATCH)"),
        caused_by(ValueError("value out of range for UInt32")),
        OverflowError("int too big to convert"),
    ],
)
def test_an_error_of_the_message_itself_is_not_an_outage(error: BaseException) -> None:
    assert store_away(error) is False


def test_an_error_is_told_on_one_line_of_at_most_500_characters() -> None:
    assert (
        one_line("Code: 60.\n  DB::Exception:\tTable t doesn't exist ")
        == "Code: 60. DB::Exception: Table t doesn't exist"
    )
    assert len(one_line("word " * 1000)) == 500
