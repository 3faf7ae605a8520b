"""ADR guarantees proven with real ``runcron`` processes and a real database.

No lost fire, no double fire, standby takeover, step-down on a dropped lock
session, two-stage shutdown. These tests take a few seconds each by nature;
they assert on what landed in ``awa_jobs``, never on durations.
"""

from __future__ import annotations

import random
import signal
import time
from datetime import timedelta
from typing import Any

import pytest

from tests.helpers.database import db_now, leader_pid, raw_connection
from tests.helpers.fires import assert_exactly_once_no_gap, slots
from tests.helpers.processes import leader_process_pid
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TASK = "tests.testapp.tasks.record"


def every_second(policy: str) -> dict[str, Any]:
    return {"cron": "* * * * * *", "task": TASK, "missed_fire_policy": policy}


def test_runcron__three_replicas_fire_each_slot_exactly_once(runcron: Any) -> None:
    schedules = {"tick-co": every_second("coalesce"), "tick-cu": every_second("catch_up")}
    procs = [runcron(schedules) for _ in range(3)]
    wait_for(lambda: all("waiting for leadership" in p.output() for p in procs), timeout=60)
    warm = db_now() + timedelta(seconds=1)
    wait_for(lambda: all(len([f for f in slots(name) if f >= warm]) >= 4 for name in schedules), timeout=60)
    for p in procs:
        p.signal(signal.SIGTERM)
    assert [p.wait() for p in procs] == [0, 0, 0]
    # Catch-up: every slot exactly once. Coalesce: never twice (a pass that a
    # loaded machine delays may rightly merge slots into one fire).
    assert len(assert_exactly_once_no_gap("tick-cu", since=warm)) >= 4
    fired = slots("tick-co")
    assert len(fired) == len(set(fired)) and len([f for f in fired if f >= warm]) >= 4


def test_runcron__sigkill_of_the_leader_loses_and_duplicates_nothing(runcron: Any) -> None:
    schedules = {"chaos-co": every_second("coalesce"), "chaos-cu": every_second("catch_up")}
    procs = [runcron(schedules) for _ in range(3)]
    wait_for(lambda: leader_process_pid(), timeout=60)
    rng = random.Random(481)
    killed: list[int] = []
    for _ in range(6):
        time.sleep(rng.uniform(0.2, 1.2))  # a random point of the leader's passes
        victim = wait_for(leader_process_pid, timeout=60)
        proc = next(p for p in procs if p.pid == victim)
        proc.kill()
        killed.append(victim)
        procs.remove(proc)
        procs.append(runcron(schedules))  # keep three replicas
        # A standby takes over.
        wait_for(lambda v=victim: (pid := leader_process_pid()) is not None and pid != v, timeout=60)
    end = db_now()
    # Coalesce: the leader in place fires the latest slot (however late a loaded machine makes it).
    wait_for(lambda: any(f >= end - timedelta(seconds=1) for f in slots("chaos-co")), timeout=60)
    for p in procs:
        p.signal(signal.SIGTERM)
    assert all(p.wait() == 0 for p in procs)
    assert len(set(killed)) == 6
    # Catch-up: every slot from the first fire to the end, exactly once.
    assert_exactly_once_no_gap("chaos-cu")
    # Coalesce: never twice, and the latest slot before shutdown was fired.
    fired = slots("chaos-co")
    assert len(fired) == len(set(fired))
    assert max(fired) >= end - timedelta(seconds=1)


def test_runcron__terminated_lock_session_makes_the_leader_step_down(runcron: Any) -> None:
    schedules = {"term-cu": every_second("catch_up")}
    proc = runcron(schedules)
    wait_for(lambda: slots("term-cu"), timeout=60)
    backend = leader_pid()
    with raw_connection() as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", [backend])
    wait_for(lambda: "stepping down" in proc.output(), timeout=60)
    # It re-elects itself on a new session and keeps firing.
    wait_for(lambda: (p := leader_pid()) is not None and p != backend, timeout=60)
    count = len(slots("term-cu"))
    wait_for(lambda: len(slots("term-cu")) >= count + 2, timeout=60)
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0
    assert_exactly_once_no_gap("term-cu")


def test_runcron__first_sigterm_finishes_and_releases(runcron: Any) -> None:
    proc = runcron({"graceful": every_second("coalesce")})
    wait_for(lambda: slots("graceful"), timeout=60)
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0
    assert "runcron: stopped" in proc.output()
    assert leader_pid() is None  # unlocked before exit


def test_runcron__first_signal_waits_for_the_pass_second_exits_at_once(runcron: Any) -> None:
    proc = runcron({"stuck": every_second("coalesce")})
    wait_for(lambda: slots("stuck"), timeout=60)
    with raw_connection(autocommit=False) as blocker, raw_connection() as observer:
        # Hold the jobs table: the leader's next fire statement blocks on its
        # insert, so its pass cannot finish. (A held schedule row does not
        # block a pass: the fire statement skips it.)
        blocker.execute("LOCK TABLE awa_jobs IN ACCESS EXCLUSIVE MODE")
        wait_for(
            lambda: observer.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND query LIKE '%awa_cron_fire_v8%'"
            ).fetchone()[0],
            timeout=60,
        )
        proc.signal(signal.SIGTERM)
        wait_for(lambda: f"signal {int(signal.SIGTERM)}:" in proc.output(), timeout=60)  # first one handled
        assert proc.proc.poll() is None  # still finishing its pass
        proc.signal(signal.SIGTERM)
        assert proc.wait() == 1
        blocker.rollback()
    assert "runcron: stopped" not in proc.output()
    wait_for(lambda: leader_pid() is None, timeout=60)  # the OS closed the session


def test_runcron__standby_fires_nothing_while_a_leader_holds_the_lock(runcron: Any) -> None:
    with raw_connection() as rival:
        from awa_django.leader.loop import LEADER_LOCK_KEY

        rival.execute("SELECT pg_advisory_lock(%s)", [LEADER_LOCK_KEY])
        proc = runcron({"blocked": every_second("coalesce")})
        wait_for(lambda: "waiting for leadership" in proc.output(), timeout=60)
        time.sleep(1.5)
        assert slots("blocked") == []
    # The rival session closed: the standby is elected and fires.
    wait_for(lambda: slots("blocked"), timeout=60)
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0


def test_runcron__pause_blocks_fires_and_resume_coalesces(runcron: Any) -> None:
    from awa_django.operations import schedules as operations

    proc = runcron({"pausable": every_second("coalesce"), "replayed": every_second("catch_up")})
    wait_for(lambda: len(slots("pausable")) >= 2 and len(slots("replayed")) >= 2, timeout=60)
    operations.pause("pausable", "ops")
    operations.pause("replayed", "ops")
    paused_at = db_now()
    time.sleep(3)
    # Nothing after the pause (a fire already committed at the pause instant may be at most that second).
    assert all(f <= paused_at for f in slots("pausable") + slots("replayed"))
    before = {name: len(slots(name)) for name in ("pausable", "replayed")}
    operations.resume("pausable", "ops")
    operations.resume("replayed", "ops")
    resumed_at = db_now()
    wait_for(lambda: any(f > resumed_at for f in slots("pausable")), timeout=60)
    # Catch-up replays every missed second (at least the 3 s of the pause).
    wait_for(
        lambda: (
            len(slots("replayed")) >= before["replayed"] + 3
            and any(f > resumed_at for f in slots("replayed"))
        ),
        timeout=60,
    )
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0
    # Coalesce: the ~3 missed seconds became one fire at resume, not three.
    missed = [f for f in slots("pausable") if paused_at < f <= resumed_at + timedelta(seconds=1)]
    assert len(missed) <= 2  # the coalesced fire (and possibly the next regular slot)
    # Catch-up: every missed second replayed, in order, exactly once.
    assert_exactly_once_no_gap("replayed")
    assert len(slots("replayed")) >= before["replayed"] + 3


def test_runcron__retired_schedule_is_inert(runcron: Any) -> None:
    from awa_django.operations import owners

    proc = runcron({"doomed": every_second("catch_up")})
    wait_for(lambda: len(slots("doomed")) >= 2, timeout=60)
    owners.retire(name="doomed", actor="ops", apply=True)
    retired_at = db_now()
    time.sleep(2.5)
    assert all(f <= retired_at for f in slots("doomed"))
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0


def test_runcron__sleeps_until_the_next_due_fire_not_a_fixed_interval(runcron: Any) -> None:
    # A one-hour evaluation interval and a coalescing schedule: a leader that
    # woke only every interval would fire once in the first hour (its start-up
    # pass). Three fires mean it woke for each next due fire; counting them, not
    # measuring their lateness, keeps the test true on a loaded machine.
    proc = runcron({"even": {"cron": "*/2 * * * * *", "task": TASK}}, env={"AWA_EVALUATE_INTERVAL": "3600"})
    wait_for(lambda: len(slots("even")) >= 3, timeout=60)
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0
    fired = slots("even")
    assert len(fired) == len(set(fired)) and all(f.second % 2 == 0 for f in fired)
