"""``manage.py awa``, ``runcron`` and ``runtasks`` as a demanding operator uses
them: bad input is a usage error naming the argument and writes nothing,
database values never reach the terminal raw.
"""

from __future__ import annotations

import getpass
import json
import threading
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, connections
from django.test import override_settings
from django.utils import timezone

from awa_django.models import CronJob, Job, QueueMeta
from tests.factories import CronJobFactory, JobFactory
from tests.helpers.database import operator_context, raw_connection

pytestmark = pytest.mark.django_db

ESC_OWNER = "ev\x1b[2Jil"


def awa(*args: str) -> str:
    out = StringIO()
    call_command("awa", *args, stdout=out)
    return out.getvalue()


def usage_error(command: str, *args: str) -> CommandError:
    """The error of a call the parser refuses (status 2 from a shell)."""
    with pytest.raises(CommandError) as info:
        call_command(command, *args, stdout=StringIO())
    assert str(info.value).startswith("Error: argument"), info.value
    return info.value


# -- numbers ------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["-1", "10001", "99999999999999999999", "x"])
def test_cli_jobs_list__limit_out_of_range_is_a_usage_error(value: str) -> None:
    assert "--limit" in str(usage_error("awa", "jobs", "list", f"--limit={value}"))


def test_cli_jobs_list__limit_bounds_are_accepted() -> None:
    ids = [JobFactory().id for _ in range(2)]
    assert [j["id"] for j in json.loads(awa("jobs", "list", "--limit=1", "--json"))] == [ids[1]]
    assert len(json.loads(awa("jobs", "list", "--limit=10000", "--json"))) == 2


@pytest.mark.parametrize("value", ["-1", "0", "99999999999999999999", "x"])
def test_cli_health__pid_out_of_range_is_a_usage_error(value: str) -> None:
    assert "--pid" in str(usage_error("awa", "health", "--role", "cron", f"--pid={value}"))


def test_cli_usage__conflicting_or_missing_options_exit_2() -> None:
    for args in (("jobs", "cancel", "1", "--cron", "x"), ("jobs", "cancel"), ("health", "--local")):
        with pytest.raises(CommandError) as info:
            call_command("awa", *args, stdout=StringIO())
        assert info.value.returncode == 2, args


# -- text arguments -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        (("cron", "show", "a\x00b"), "argument name: schedule name 'a\\x00b': contains a NUL"),
        (("cron", "pause", "a\ud800"), "argument name: schedule name 'a\\ud800': contains a lone"),
        (("cron", "retire", "a\x00b", "--apply"), "argument name: schedule name"),
        (("cron", "adopt", "s", "o", "--expected-owner", "a\x00b"), "argument --expected-owner"),
        (("cron", "plan", "a\x00b"), "argument owner"),
        (("jobs", "list", "--cron", "a\x00b"), "argument --cron: schedule name"),
        (("jobs", "list", "--queue", "a\x00b"), "argument --queue: queue name"),
        (("jobs", "cancel", "--cron", "a\x00b"), "argument --cron: schedule name"),
        (("queue", "resume", "a\x00b"), "argument name: queue name"),
        (("cron", "pause", "s", "--actor", "a\x00b"), "argument --actor: actor 'a\\x00b': contains a NUL"),
        (("cron", "pause", "s", "--actor", "ev\x1bil"), "argument --actor: actor 'ev\\x1bil': contains the"),
        (("queue", "pause", "q", "--actor", "a\u202eb"), "argument --actor"),
        (("jobs", "retry", "1", "--actor", "a\x00b"), "argument --actor"),
    ],
)
def test_cli__unstorable_text_is_a_usage_error_naming_the_argument(
    args: tuple[str, ...], argument: str
) -> None:
    CronJobFactory(name="s")
    assert argument in str(usage_error("awa", *args))
    row = CronJob.objects.get(name="s")
    assert row.paused_at is None and row.owner_id is None
    assert not QueueMeta.objects.exists()


@pytest.mark.parametrize("queue", ["", "x" * 201, "tab\there", "\u202eevil", "a\x00b"])
def test_cli_queue_pause__refuses_names_awa_jobs_cannot_hold(queue: str) -> None:
    assert "argument name: queue name" in str(usage_error("awa", "queue", "pause", queue))
    assert not QueueMeta.objects.exists()


def test_cli_queue_resume__still_resumes_a_queue_raw_sql_paused_under_a_hostile_name() -> None:
    QueueMeta.objects.create(queue="q\x1b", paused_at=timezone.now(), paused_by="sql")
    assert json.loads(awa("queue", "resume", "q\x1b", "--json"))["changed"] is True


@pytest.mark.parametrize("owner", ["", "  ", "x" * 201])
def test_cli_cron_plan__an_invalid_owner_is_refused_like_the_other_owner_verbs(owner: str) -> None:
    with pytest.raises(CommandError, match="owner must be a non-blank string"):
        awa("cron", "plan", owner)


def test_cli__default_actor_from_a_hostile_login_name_is_recorded_escaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(getpass, "getuser", lambda: ESC_OWNER)
    CronJobFactory(name="s")
    assert awa("cron", "pause", "s").strip() == "pause: s: done"
    assert CronJob.objects.get(name="s").paused_by == "cli:ev\\x1b[2Jil"


# -- database values in error messages ---------------------------------------------------


def test_cli__error_messages_escape_database_values() -> None:
    CronJobFactory(name="s")
    with operator_context(), connection.cursor() as cursor:
        cursor.execute("INSERT INTO awa_cron_owners (owner_id) VALUES (%s)", [ESC_OWNER])
        cursor.execute("UPDATE awa_cron_jobs SET owner_id = %s WHERE name = 's'", [ESC_OWNER])
    with pytest.raises(CommandError) as info:
        awa("cron", "adopt", "s", "billing", "--apply")
    assert "\x1b" not in str(info.value)
    assert "found ev\\x1b[2Jil" in str(info.value)
    assert CronJob.objects.get(name="s").owner_id == ESC_OWNER


# -- runcron and runtasks -----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_runcron_once__fired_schedule_names_are_printed_escaped() -> None:
    CronJobFactory(name="template")
    with operator_context(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE awa_cron_jobs SET name = %s, last_enqueued_at = now() - interval '90 seconds' "
            "WHERE name = 'template'",
            ["fire\x1b[2J"],
        )
    out = StringIO()
    call_command("runcron", "--once", stdout=out)
    assert "fire\\x1b[2J @ " in out.getvalue()
    assert "\x1b" not in out.getvalue()


@pytest.mark.parametrize("value", ["0", "1001", "99999999999999999999", "x"])
def test_runtasks__concurrency_out_of_range_is_a_usage_error(value: str) -> None:
    assert "--concurrency" in str(usage_error("runtasks", "--burst", f"--concurrency={value}"))


@pytest.mark.parametrize("value", ["a\x1bb", "\u202eevil", "new\nline"])
def test_runtasks__worker_id_with_control_characters_is_a_usage_error(value: str) -> None:
    assert "--worker-id" in str(usage_error("runtasks", "--burst", "--worker-id", value))


def test_runtasks__unknown_backend_names_settings_tasks() -> None:
    with pytest.raises(CommandError, match=r"task backend 'nope' is not defined in settings.TASKS"):
        call_command("runtasks", "--burst", "--backend", "nope", stdout=StringIO())


# -- bounded waits ------------------------------------------------------------------------


def gives_up_on_the_lock(*args: str) -> str:
    """``awa ARGS`` in a thread (its own connection): the error it stops with,
    well within a generous deadline, while another session holds the lock."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            awa(*args)
        except CommandError as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "still waiting on the lock"
    assert len(errors) == 1, errors
    return str(errors[0])


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "verb",
    ["jobs retry", "jobs cancel", "jobs cancel --cron", "queue resume"],
    ids=lambda v: v.replace(" ", "-"),
)
def test_cli_job_and_queue_verbs__a_held_row_lock_is_waited_for_at_most_awa_lock_timeout(verb: str) -> None:
    job = JobFactory(state="failed" if verb == "jobs retry" else "available", metadata={"cron_name": "s"})
    QueueMeta.objects.create(queue="q", paused_at=timezone.now(), paused_by="eve")
    args = {
        "jobs retry": ("jobs", "retry", str(job.id)),
        "jobs cancel": ("jobs", "cancel", str(job.id)),
        "jobs cancel --cron": ("jobs", "cancel", "--cron", "s"),
        "queue resume": ("queue", "resume", "q"),
    }[verb]
    holder = raw_connection(autocommit=False)
    try:
        holder.execute("SELECT 1 FROM awa_jobs FOR UPDATE")
        holder.execute("SELECT 1 FROM awa_queue_meta FOR UPDATE")
        with override_settings(AWA_LOCK_TIMEOUT=0.2):
            message = gives_up_on_the_lock(*args)
    finally:
        holder.rollback()
        holder.close()
    assert message.startswith("gave up waiting for another session (canceling statement due to lock timeout;")
    assert "AWA_LOCK_TIMEOUT=0.2s" in message
    assert Job.objects.get(id=job.id).state == job.state
    assert QueueMeta.objects.get(queue="q").paused_by == "eve"


def test_cli_jobs_list__escaped_values_keep_the_columns_aligned() -> None:
    JobFactory(queue="q\x1bx")
    JobFactory(queue="plain")
    lines = awa("jobs", "list").splitlines()
    assert "\x1b" not in "".join(lines)
    # TASK, the column after QUEUE and ATTEMPT, starts at one offset on every line.
    starts = {line.index(" ", line.index("/") + 1) for line in lines[1:]}
    assert len(starts) == 1, lines
