"""The leader's "now" is the database clock, not the host's.

A ``runcron --once`` subprocess runs under libfaketime (Debian package
``faketime``) with its wall clock shifted by hours, as on a host whose clock is
wrong. Fires must follow PostgreSQL's clock.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta

import pytest

from awa_django.models import Job
from tests.factories import CronJobFactory
from tests.helpers.database import database_url, db_now
from tests.helpers.processes import ROOT

pytestmark = pytest.mark.django_db(transaction=True)
LIBFAKETIME = next(
    (
        p
        for p in (
            "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
            "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
            "/usr/lib/faketime/libfaketime.so.1",
        )
        if os.path.exists(p)
    ),
    None,
)


@pytest.fixture(autouse=True)
def _needs_libfaketime() -> None:
    if LIBFAKETIME is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install libfaketime (apt-get install faketime); .ci/run does")
        pytest.skip("libfaketime is not installed here (apt-get install faketime); CI runs this test")


def shifted(shift: timedelta, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="tests.settings",
        DATABASE_URL=database_url(),
        LD_PRELOAD=str(LIBFAKETIME),
        FAKETIME=f"{int(shift.total_seconds()):+d}s",
        FAKETIME_DONT_FAKE_MONOTONIC="1",
    )
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def test_clockshift__harness_really_shifts_the_host_clock() -> None:
    out = shifted(
        timedelta(hours=-3), "-c", "import datetime; print(datetime.datetime.now(datetime.UTC).isoformat())"
    )
    host = datetime.fromisoformat(out.stdout.strip())
    assert abs((db_now() - host) - timedelta(hours=3)) < timedelta(minutes=1)


@pytest.mark.parametrize("shift_hours", [-3, 3])
def test_runcron__fires_by_database_time_whatever_the_host_clock(shift_hours: int) -> None:
    now = db_now()
    # Due by the database clock: never fired, created now -> this minute's slot.
    CronJobFactory(name="due-now", cron_expr="* * * * *", created_at=now)
    # Not due by the database clock (already fired this minute's slot); a host
    # clock 3 h ahead would fire it, one 3 h behind would see nothing at all.
    CronJobFactory(
        name="not-due",
        cron_expr="* * * * *",
        created_at=now,
        last_enqueued_at=now.replace(second=0, microsecond=0),
    )
    result = shifted(timedelta(hours=shift_hours), "-m", "django", "runcron", "--once")
    assert result.returncode == 0, result.stderr
    fired = list(Job.objects.values_list("metadata__cron_name", "metadata__cron_fire_at"))
    minute = now.replace(second=0, microsecond=0)
    if db_now().replace(second=0, microsecond=0) == minute:  # no minute boundary crossed meanwhile
        assert fired == [("due-now", minute.isoformat())]
    else:
        assert ("due-now", minute.isoformat()) in fired or len(fired) >= 1
        assert all(name != "not-due" or at != minute.isoformat() for name, at in fired)
