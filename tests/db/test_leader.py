"""The Leader class driven in-process, with a second real session as rival."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connections
from django.test.utils import override_settings

from awa_django.declarations.declaration import build_schedule
from awa_django.exceptions import LeadershipUnavailable
from awa_django.leader.loop import LEADER_LOCK_KEY, Leader
from awa_django.models import CronJob, Job
from tests.factories import CronJobFactory
from tests.helpers.database import leader_pid
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

FAST = {
    "AWA_ELECTION_INTERVAL": 0.1,
    "AWA_EVALUATE_INTERVAL": 0.2,
    "AWA_LEADER_CHECK_INTERVAL": 0.2,
}


class LeaderThread:
    """Run ``Leader.run()`` in a thread (with its own Django connection)."""

    def __init__(self, leader: Leader) -> None:
        self.leader = leader
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            self.leader.run()
        except BaseException as exc:  # surfaced by stop()
            self.error = exc
        finally:
            connections.close_all()

    def start(self) -> LeaderThread:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.leader.stop()
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "leader did not stop"
        assert self.error is None, self.error


@pytest.fixture
def leader_threads() -> Iterator[Any]:
    threads: list[LeaderThread] = []

    def start(**kwargs: Any) -> LeaderThread:
        t = LeaderThread(Leader(schedules=kwargs.pop("schedules", []), **kwargs)).start()
        threads.append(t)
        return t

    yield start
    for t in threads:
        if t.thread.is_alive():
            t.stop()


def test_leader__lock_is_exclusive(second_connection: psycopg.Connection[Any]) -> None:
    first = Leader(schedules=[])
    rival = Leader(schedules=[])
    assert first.try_acquire()
    try:
        assert not rival.try_acquire()
        # A plain session cannot take it either: it is one server-wide lock.
        assert second_connection.execute("SELECT pg_try_advisory_lock(%s)", [LEADER_LOCK_KEY]).fetchone() == (
            False,
        )
    finally:
        first.release()
    assert rival.try_acquire()
    rival.release()


def test_runcron_once__fails_clearly_while_another_process_leads(
    second_connection: psycopg.Connection[Any],
) -> None:
    second_connection.execute("SELECT pg_advisory_lock(%s)", [LEADER_LOCK_KEY])
    with pytest.raises(LeadershipUnavailable):
        Leader(schedules=[]).run_once()
    with pytest.raises(CommandError, match="another runcron process holds the leader lock"):
        call_command("runcron", "--once")
    assert Job.objects.count() == 0


def test_runcron_once__syncs_fires_and_releases() -> None:
    schedule = build_schedule("every-minute", "* * * * *", "tests.testapp.tasks.record")
    result = Leader(schedules=[schedule]).run_once()
    assert [j["metadata"]["cron_name"] for j in result.jobs] == ["every-minute"]
    assert CronJob.objects.filter(name="every-minute").exists()
    assert leader_pid() is None  # released


def test_runcron_once__announces_after_releasing_the_lock() -> None:
    from awa_django.client.compat import task_enqueued

    held: list[int | None] = []

    def receiver(**kwargs: Any) -> None:  # a slow or hung receiver must not hold the lock
        held.append(leader_pid())

    task_enqueued.connect(receiver, weak=False)
    try:
        schedule = build_schedule("every-minute", "* * * * *", "tests.testapp.tasks.record")
        Leader(schedules=[schedule]).run_once()
    finally:
        task_enqueued.disconnect(receiver)
    assert held == [None]


@override_settings(**FAST)
def test_leader__steps_down_when_its_lock_session_is_terminated(
    leader_threads: Any, second_connection: psycopg.Connection[Any]
) -> None:
    t = leader_threads()
    first_backend = wait_for(leader_pid)
    second_connection.execute("SELECT pg_terminate_backend(%s)", [first_backend])
    # It notices at once (the LISTEN wait errors), steps down and is re-elected
    # on a new session, since no rival is running.
    new_backend = wait_for(lambda: (p := leader_pid()) and p != first_backend and p, timeout=60)
    assert new_backend != first_backend
    wait_for(lambda: t.leader.is_leader, timeout=60)  # set right after the lock is taken
    t.stop()
    assert leader_pid() is None


@override_settings(**FAST)
def test_leader__standby_takes_over_when_the_leader_stops(leader_threads: Any) -> None:
    a = leader_threads()
    wait_for(lambda: a.leader.is_leader)
    b = leader_threads()
    time.sleep(0.5)
    assert not b.leader.is_leader  # standby while a leads
    a.stop()
    wait_for(lambda: b.leader.is_leader, timeout=60)


# An hour between passes: within the 60 s deadline only the NOTIFY can wake it.
@override_settings(AWA_EVALUATE_INTERVAL=3600, AWA_LEADER_CHECK_INTERVAL=3600, AWA_ELECTION_INTERVAL=0.1)
def test_leader__notify_wakes_a_sleeping_leader(leader_threads: Any) -> None:
    passes: list[float] = []
    CronJobFactory(name="yearly", cron_expr="0 0 1 1 *")
    t = leader_threads(on_pass=lambda r: passes.append(time.monotonic()))
    wait_for(lambda: passes)  # first pass done; next wake would be in an hour
    time.sleep(0.3)
    CronJobFactory(name="minutely", cron_expr="* * * * *")  # NOTIFY awa_cron
    job = wait_for(lambda: Job.objects.filter(metadata__cron_name="minutely").first(), timeout=60)
    assert job is not None
    t.stop()


@override_settings(**FAST)
def test_leader__survives_a_dropped_evaluation_connection(
    leader_threads: Any, second_connection: psycopg.Connection[Any]
) -> None:
    CronJobFactory(name="ticker", cron_expr="* * * * * *")
    t = leader_threads()
    wait_for(lambda: Job.objects.filter(metadata__cron_name="ticker").exists())
    # Kill every session of this database except ours and the lock holder's.
    lock_backend = leader_pid()
    second_connection.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> %s "
        "AND application_name NOT LIKE 'pytest%%'",
        [lock_backend],
    )
    connections["default"].close()  # our own Django session may have been among them
    count = Job.objects.filter(metadata__cron_name="ticker").count()
    wait_for(lambda: Job.objects.filter(metadata__cron_name="ticker").count() >= count + 2, timeout=60)
    t.stop()
    slots = list(
        Job.objects.filter(metadata__cron_name="ticker").values_list("metadata__cron_fire_at", flat=True)
    )
    assert len(slots) == len(set(slots))


@override_settings(**FAST)
def test_leader__standby_syncs_its_own_declarations(
    leader_threads: Any, second_connection: psycopg.Connection[Any]
) -> None:
    # Another deployment leads (here: a session holding the lock); this one's
    # schedules must reach the table anyway.
    second_connection.execute("SELECT pg_advisory_lock(%s)", [LEADER_LOCK_KEY])
    schedule = build_schedule("standby-declared", "0 0 1 1 *", "tests.testapp.tasks.record")
    t = leader_threads(schedules=[schedule])
    wait_for(lambda: CronJob.objects.filter(name="standby-declared").exists(), timeout=60)
    assert not t.leader.is_leader
    assert Job.objects.count() == 0  # a standby never fires
    t.stop()


def test_runcron_once__a_failed_pass_exits_non_zero() -> None:
    from django.db import connection

    CronJobFactory(name="due", cron_expr="* * * * *")
    with connection.cursor() as cursor:
        cursor.execute("ALTER FUNCTION awa_cron_fire_v8(jsonb) RENAME TO awa_cron_fire_v8_hidden")
    try:
        with pytest.raises(CommandError, match="evaluation pass failed"):
            call_command("runcron", "--once")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER FUNCTION awa_cron_fire_v8_hidden(jsonb) RENAME TO awa_cron_fire_v8")
    assert Job.objects.count() == 0


# A long lock timeout: maintenance must stay blocked for the whole test.
@override_settings(**FAST, AWA_SYNC_INTERVAL=0.2, AWA_LOCK_TIMEOUT=300)
def test_leader__slow_maintenance_never_delays_fires(
    leader_threads: Any, second_connection: psycopg.Connection[Any]
) -> None:
    from awa_django.models import CronOwner

    def maintenance_blocked() -> bool:
        # Any session of this test database waiting on a lock: the maintenance
        # thread (reconciliation, snapshot clean-up) behind the protocol lock.
        return bool(
            second_connection.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            ).fetchone()[0]
        )

    CronOwner.objects.create(owner_id="billing")  # reconciliation needs the protocol lock
    CronJobFactory(name="ticking", cron_expr="* * * * * *")
    t = leader_threads()
    wait_for(lambda: Job.objects.filter(metadata__cron_name="ticking").exists(), timeout=60)
    second_connection.execute("BEGIN")
    second_connection.execute("SELECT awa_cron_protocol_lock()")  # reconciliation now blocks
    try:
        wait_for(maintenance_blocked, timeout=60)
        fired = Job.objects.filter(metadata__cron_name="ticking").count()
        wait_for(lambda: Job.objects.filter(metadata__cron_name="ticking").count() >= fired + 3, timeout=60)
        assert maintenance_blocked()  # fires went on while maintenance waited
    finally:
        second_connection.execute("COMMIT")
    t.stop()


@override_settings(**FAST)
def test_leader__a_hung_task_enqueued_receiver_never_stops_the_fires(
    leader_threads: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    from awa_django.client.compat import task_enqueued
    from awa_django.leader import announcer

    monkeypatch.setattr(announcer, "STUCK_AFTER", 0.5)
    release = threading.Event()

    def hang(**kwargs: Any) -> None:
        release.wait(300)

    task_enqueued.connect(hang, weak=False)
    try:
        CronJobFactory(name="ticking", cron_expr="* * * * * *")
        t = leader_threads()
        wait_for(lambda: Job.objects.filter(metadata__cron_name="ticking").count() >= 1, timeout=60)
        # The first announcement hangs; the leader goes on firing every second.
        fired = Job.objects.filter(metadata__cron_name="ticking").count()
        wait_for(lambda: Job.objects.filter(metadata__cron_name="ticking").count() >= fired + 15, timeout=120)
        stuck = [r for r in caplog.records if r.__dict__.get("event") == "cron.announce_stuck"]
        assert stuck and stuck[0].__dict__["receiver"].endswith(".hang")  # named
    finally:
        release.set()
        task_enqueued.disconnect(hang)
    t.stop()
