"""Check W104 reads PgBouncer's *effective* pool mode for the alias's database and user.

PgBouncer's global ``pool_mode`` is only the default: a ``[databases]`` entry
(``pool_mode=``) overrides it for that database, and a ``[users]`` entry
overrides both for that user. A real ``pgbouncer`` with such overrides runs in
front of the test server; ``manage.py check --database default`` runs in a
subprocess whose default alias goes through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from django.db import connection

from awa_django.db.aliases import effective_pool_mode
from tests.helpers.database import database_user, tcp_address
from tests.helpers.processes import manage_with as manage
from tests.helpers.servers import PgBouncer, server_dir

W104 = "awa_django.W104"


@pytest.fixture
def start_pgbouncer() -> Iterator[Callable[..., PgBouncer]]:
    """Start PgBouncers in front of the test server (stopped after the test)."""
    host, port = tcp_address()
    with ExitStack() as stack:

        def start(**options: Any) -> PgBouncer:
            bouncer = PgBouncer(
                stack.enter_context(server_dir("awa-pgbouncer-")), host, port, user=database_user(), **options
            )
            stack.callback(bouncer.stop)
            return bouncer

        yield start


def probe(bouncer: PgBouncer, dbname: str) -> str:
    """The output of ``check --database default`` for a default alias through ``bouncer``."""
    done = manage({"DATABASE_URL": bouncer.url(dbname)}, "check", "--database", "default")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_w104__a_per_database_transaction_pool_is_reported(start_pgbouncer: Callable[..., PgBouncer]) -> None:
    name = connection.settings_dict["NAME"]
    bouncer = start_pgbouncer(
        pool_mode="session", databases={f"{name}_tx": f"dbname={name} pool_mode=transaction"}
    )
    assert [r["value"] for r in bouncer.admin("SHOW CONFIG") if r["key"] == "pool_mode"] == ["session"]
    output = probe(bouncer, f"{name}_tx")
    assert W104 in output and "is a PgBouncer, pool_mode=transaction" in output
    # The same PgBouncer's other databases pool sessions: no warning there.
    assert W104 not in probe(bouncer, name)


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_w104__a_per_user_transaction_pool_is_reported_and_wins_over_the_database(
    start_pgbouncer: Callable[..., PgBouncer],
) -> None:
    name = connection.settings_dict["NAME"]
    bouncer = start_pgbouncer(
        pool_mode="session",
        users={"postgres": "pool_mode=transaction"},
        databases={f"{name}_session": f"dbname={name} pool_mode=session"},
    )
    for dbname in (name, f"{name}_session"):  # the user's mode overrides the database's
        output = probe(bouncer, dbname)
        assert W104 in output and "is a PgBouncer, pool_mode=transaction" in output


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_w104__a_per_database_session_pool_is_not_reported_under_global_transaction(
    start_pgbouncer: Callable[..., PgBouncer],
) -> None:
    name = connection.settings_dict["NAME"]
    bouncer = start_pgbouncer(
        pool_mode="transaction", databases={f"{name}_session": f"dbname={name} pool_mode=session"}
    )
    assert W104 not in probe(bouncer, f"{name}_session")
    assert "is a PgBouncer, pool_mode=transaction" in probe(bouncer, name)


def rows(*items: dict[str, Any]) -> list[dict[str, Any]]:
    return list(items)


def test_effective_pool_mode__prefers_the_pool_pgbouncer_reports() -> None:
    pools = rows({"database": "app", "user": "web", "pool_mode": "session"})
    users = rows({"name": "web", "pool_mode": "transaction"})
    assert effective_pool_mode("web", "app", [], users, pools, "transaction") == "session"


def test_effective_pool_mode__pool_of_a_forced_user() -> None:
    databases = rows({"name": "app", "force_user": "owner", "pool_mode": None})
    pools = rows(
        {"database": "app", "user": "web", "pool_mode": "session"},
        {"database": "app", "user": "owner", "pool_mode": "transaction"},
    )
    assert effective_pool_mode("web", "app", databases, [], pools, "session") == "transaction"


def test_effective_pool_mode__without_a_pool_user_then_database_then_global() -> None:
    # An older PgBouncer (no pool_mode column in SHOW POOLS), or no pool yet.
    pools = rows({"database": "app", "user": "web"})
    databases = rows({"name": "app", "force_user": None, "pool_mode": "statement"})
    users = rows({"name": "web", "pool_mode": "transaction"}, {"name": "other", "pool_mode": "session"})
    assert effective_pool_mode("web", "app", databases, users, pools, "session") == "transaction"
    assert effective_pool_mode("other", "app", databases, users, pools, "transaction") == "session"
    assert effective_pool_mode("nobody", "app", databases, users, pools, "session") == "statement"
    assert effective_pool_mode("nobody", "other-db", databases, users, pools, "session") == "session"
    assert effective_pool_mode("nobody", "other-db", [], [], [], None) == "unknown"
