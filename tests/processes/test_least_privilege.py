"""The minimal grants documented in docs/howto/deploying-runcron.md are enough
for ``runcron``, ``runtasks`` and the ``awa`` verbs, and a missing one is named.

The grants are read from the documentation itself, so the two cannot drift.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator

import pytest

from awa_django.models import Job
from tests.helpers.database import database_url, raw_connection
from tests.helpers.processes import ROOT, manage

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

DOC = ROOT / "docs/howto/deploying-runcron.md"
ROLES = ("awa_runcron", "awa_runtasks", "awa_operator")
RECORD = "tests.testapp.tasks.record"


def documented_grants() -> str:
    text = DOC.read_text()
    section = text[text.index("### Least-privilege database roles") :]
    match = re.search(r"```sql\n(.*?)```", section, re.S)
    assert match
    return match.group(1)


@pytest.fixture
def roles() -> Iterator[dict[str, str]]:
    suffix = f"_t{os.getpid()}"
    names = {role: role + suffix for role in ROLES}
    sql = documented_grants()
    for role, name in names.items():
        sql = re.sub(rf"\b{role}\b", name, sql)
    with raw_connection() as conn:
        for name in names.values():
            conn.execute(f"DROP ROLE IF EXISTS {name}")
            conn.execute(f"CREATE ROLE {name} LOGIN")
        conn.execute(sql)
    try:
        yield names
    finally:
        with raw_connection() as conn:
            for name in names.values():
                conn.execute(f"DROP OWNED BY {name}")
                conn.execute(f"DROP ROLE {name}")


def run(
    role: str, *args: str, schedules: dict[str, object] | None = None
) -> subprocess.CompletedProcess[str]:
    url = re.sub(r"^postgres://[^@]*@", f"postgres://{role}@", database_url())
    return manage(
        *args,
        DATABASE_URL=url,
        AWA_TEST_SCHEDULES=json.dumps(schedules or {}),
        AWA_SHUTDOWN_TIMEOUT="5",
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_least_privilege__documented_grants_run_every_process_and_verb(roles: dict[str, str]) -> None:
    schedules = {"every-second": {"cron": "* * * * * *", "task": RECORD}}
    assert "enqueued 1 job(s)" in ok(run(roles["awa_runcron"], "runcron", "--once", schedules=schedules))
    ok(run(roles["awa_runtasks"], "runtasks", "--burst", schedules=schedules))
    assert Job.objects.get().state == "completed"
    operator = roles["awa_operator"]
    for verb in (
        ["cron", "list"],
        ["cron", "show", "every-second"],
        ["cron", "pause", "every-second"],
        ["cron", "resume", "every-second"],
        ["cron", "trigger", "every-second"],
        ["jobs", "list"],
        ["jobs", "cancel", "--cron", "every-second"],
        ["jobs", "retry", "CANCELLED"],
        ["jobs", "prune", "--dry-run"],
        ["jobs", "prune"],
        ["queue", "pause", "default"],
        ["queue", "resume", "default"],
        ["queue", "list"],
        ["cron", "owners"],
        ["cron", "plan", "billing"],
        ["cron", "adopt", "every-second", "billing"],
        ["cron", "adopt", "every-second", "billing", "--apply"],
        ["cron", "retire", "every-second", "--apply"],
        ["cron", "restore", "every-second", "--apply"],
    ):
        if verb[-1] == "CANCELLED":
            verb[-1] = str(Job.objects.get(state="cancelled").id)
        ok(run(operator, "awa", *verb))


def test_least_privilege__a_missing_grant_is_named(roles: dict[str, str]) -> None:
    with raw_connection() as conn:
        conn.execute(f"REVOKE INSERT ON awa_jobs FROM {roles['awa_runcron']}")
    schedules = {"every-second": {"cron": "* * * * * *", "task": RECORD}}
    result = run(roles["awa_runcron"], "runcron", "--once", schedules=schedules)
    assert result.returncode == 1
    assert "permission denied for table awa_jobs" in result.stderr
    assert "evaluation pass failed" not in result.stderr
    assert "privilege" in result.stderr


def test_least_privilege__operator_missing_grant_is_named(roles: dict[str, str]) -> None:
    with raw_connection() as conn:
        conn.execute(f"REVOKE UPDATE ON awa_queue_meta FROM {roles['awa_operator']}")
    result = run(roles["awa_operator"], "awa", "queue", "pause", "default")
    assert result.returncode == 1
    assert "missing database privilege: permission denied for table awa_queue_meta" in result.stderr
    assert "Traceback" not in result.stderr
