"""A store's URL that cannot be used is a CheckpointError naming the server, never the password:
not in its message, its repr, the errors it came from, its traceback or a log record."""

from __future__ import annotations

import logging
import traceback

import pytest
from redis_server import free_port

from nbgraph import CheckpointError, PostgresCheckpointer, RedisCheckpointer

PASSWORD = "Sekr3t%Pw0rd"


def assert_hidden(text: str, password: str = PASSWORD) -> None:
    """``text`` holds no run of 4 characters of ``password`` (so neither it, nor "Sekr3t", nor "Pw0rd")."""
    for i in range(len(password) - 3):
        assert password[i : i + 4] not in text, f"{password[i : i + 4]!r} of the password in {text!r}"


def chain(exc: BaseException | None) -> list[BaseException]:
    """``exc`` and every error it came from."""
    found: list[BaseException] = []
    while exc is not None and exc not in found:
        found.append(exc)
        exc = exc.__cause__ or exc.__context__
    return found


def assert_error_hides(exc: BaseException, caplog: pytest.LogCaptureFixture, password: str = PASSWORD) -> None:
    for error in chain(exc):
        assert_hidden(str(error), password)
        assert_hidden(repr(error), password)
    assert_hidden("".join(traceback.format_exception(exc)), password)
    for record in caplog.records:
        assert_hidden(record.getMessage(), password)
        if record.exc_info and record.exc_info[1] is not None:
            assert_hidden("".join(traceback.format_exception(record.exc_info[1])), password)


@pytest.mark.parametrize(
    ("dsn", "server"),
    [
        # A "%" that is no percent-escape: the parser fails, quoting the password.
        (f"postgresql://user:{PASSWORD}@127.0.0.1:5432/db", "host '127.0.0.1', port '5432', database 'db'"),
        (f"postgresql://user:{PASSWORD}@db.example:notaport/orders", "host 'db.example', port 'notaport'"),
        (f"postgresql://user:{PASSWORD}@[::1/db", "host '[::1', database 'db'"),
        (f"postgresql://db.example:5432/orders?password={PASSWORD}", "host 'db.example', port '5432'"),
        # A "/" or "@" in the password: the parser reads part of it as the port, host or database.
        ("postgresql://user:Sekr3t/Pw0rd@db.example:5432/orders", "host 'db.example', port '5432', database 'orders'"),
        ("postgresql://user:Sekr3t@Pw0rd@db.example:5432/orders", "host 'db.example', port '5432', database 'orders'"),
        ("postgresql://user:1234/Sekr3tPw0rd@db.example/orders", "host 'db.example', database 'orders'"),
        # Where even the server cannot be told from the password, what would show a piece of it is hidden.
        ("postgresql://user:Sekr3t@Pw0rd?x@db.example/orders", "host [redacted]"),
        # A connection string: spaces in an unquoted password, or a quote left open.
        (f"host=db.example dbname=orders password={PASSWORD} Pw0rd", "host 'db.example', database 'orders'"),
        (f"host=db.example dbname=orders password='{PASSWORD}", "host 'db.example'"),
    ],
)
def test_a_malformed_postgres_dsn_names_the_server_never_the_password(
    dsn: str, server: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(CheckpointError) as info:
        PostgresCheckpointer(dsn, timeout=1)
    assert str(info.value).startswith(
        f"PostgresCheckpointer: the dsn is not a PostgreSQL URL or connection string ({server}"
    ), str(info.value)
    assert_error_hides(info.value, caplog)


def test_a_percent_in_a_postgres_password_is_hidden_and_explained(caplog: pytest.LogCaptureFixture) -> None:
    dsn = "postgresql://user:pa%ss@127.0.0.1:5432/db"
    with pytest.raises(CheckpointError) as info:
        PostgresCheckpointer(dsn)
    assert str(info.value) == (
        "PostgresCheckpointer: the dsn is not a PostgreSQL URL or connection string (host '127.0.0.1', "
        "port '5432', database 'db'): invalid percent-encoded token: \"[redacted]\"; in a URL, a password "
        "writes '%', '/', '@', '?' and '#' as %25, %2F, %40, %3F and %23"
    )
    assert_error_hides(info.value, caplog, "pa%ss")


def test_a_postgres_server_that_refuses_never_sees_its_password_shown(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    port = free_port()
    dsn = f"postgresql://user:Sekr3t%25Pw0rd@127.0.0.1:{port}/orders"  # (a well-written "%")
    with pytest.raises(
        CheckpointError, match=rf"^Postgres store postgresql://127.0.0.1:{port}/orders: could not open"
    ) as info:
        PostgresCheckpointer(dsn, timeout=1)
    assert_error_hides(info.value, caplog)  # (and what the pool logged of the failed connection, if it did yet)
    assert_error_hides(info.value, caplog, "Sekr3t%25Pw0rd")


@pytest.mark.parametrize(
    ("url", "server"),
    [
        (f"redis://:{PASSWORD}@cache.example:notaport/0", "host 'cache.example', port 'notaport', database '0'"),
        (f"redis://:{PASSWORD}@cache.example:99999999/0", "host 'cache.example', port '99999999', database '0'"),
        (f"redis://:{PASSWORD}@[::1/0", "host '[::1', database '0'"),
        (f"redis://cache.example:6379/0?password={PASSWORD}&db=x", "host 'cache.example', port '6379', database 'x'"),
        (f"http://:{PASSWORD}@cache.example:6379/0", "host 'cache.example', port '6379', database '0'"),
        # A "/", "#" or "?" in the password ends the server's part early: urllib reads the password
        # as the port (and quotes it) or the rest as the database.
        ("redis://user:Sekr3t/Pw0rd@cache.example:6379/0", "host 'cache.example', port '6379', database '0'"),
        ("redis://:Sekr3t#Pw0rd@cache.example:6379/0", "host 'cache.example', port '6379', database '0'"),
        ("redis://:Sekr3t?Pw0rd@cache.example:6379/0", "host 'cache.example', port '6379', database '0'"),
        ("redis://:1234/Sekr3tPw0rd@cache.example:6379/0", "host 'cache.example', port '6379', database '0'"),
    ],
)
def test_a_malformed_redis_url_names_the_server_never_the_password(
    url: str, server: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(CheckpointError) as info:
        RedisCheckpointer(url)
    assert str(info.value).startswith(f"RedisCheckpointer: the url is not a Redis URL ({server}): "), str(info.value)
    assert_error_hides(info.value, caplog)


def test_a_redis_store_with_a_password_never_shows_it(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    port = free_port()
    url = f"redis://user:{PASSWORD}@127.0.0.1:{port}/0"  # (redis-py keeps a "%" that is no escape as it is)
    store = RedisCheckpointer(url)
    assert_hidden(repr(store))
    assert_hidden(str(store))
    assert_hidden(store.name)
    with pytest.raises(CheckpointError, match=rf"^Redis store redis://127.0.0.1:{port}/0: could not read") as info:
        store.get("t")
    assert_error_hides(info.value, caplog)
    store.close()
