"""The public Python API used as a hostile or careless caller would use it.

Operator functions (:mod:`awa_django.operations`, :mod:`awa_django.ownership`,
:mod:`awa_django.queues`), declarations (``periodic()``, ``AWA_SCHEDULES``) and
``AwaBackend.enqueue_many``: bad input fails alone, with a clear error naming
what is wrong, writes nothing and leaves the caller's transaction usable.
"""

from __future__ import annotations

import sys
import types
import unicodedata
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.core.checks import run_checks
from django.db import connection, transaction
from django.test import override_settings

from awa_django import InvalidSchedule
from awa_django.client.backend import AwaBackend
from awa_django.client.compat import InvalidTask, task, task_backends
from awa_django.declarations.declaration import (
    build_schedule,
    declared_schedules,
    periodic,
    registry,
)
from awa_django.declarations.sync import sync_schedules
from awa_django.exceptions import ScheduleNotFound
from awa_django.models import CronJob, Job, QueueMeta
from awa_django.operations import owners, queues, schedules
from tests.factories import CronJobFactory, JobFactory
from tests.testapp.backend_tasks import echo, report

pytestmark = pytest.mark.django_db

RECORD = "tests.testapp.tasks.record"


def transaction_still_usable() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return bool(cursor.fetchone() == (1,))


# --- actor --------------------------------------------------------------------------

BAD_ACTORS = {
    "nul": "al\x00ice",
    "lone_surrogate": "al\ud800ice",
    "escape": "alice\x1b[31m",
    "newline": "alice\nforged",
    "rtl_override": "alice\u202e",
    "too_long": "a" * 201,
}


@pytest.mark.parametrize("case", sorted(BAD_ACTORS))
def test_schedule_actions__unstorable_or_unprintable_actor_is_refused_and_nothing_written(case: str) -> None:
    CronJobFactory(name="nightly")
    actor = BAD_ACTORS[case]
    with transaction.atomic():
        for action in (schedules.pause, schedules.trigger, schedules.remove):
            with pytest.raises(ValueError, match="actor"):
                action("nightly", actor)
        with pytest.raises(ValueError, match="actor"):
            owners.retire("nightly", actor=actor, apply=True)
        with pytest.raises(ValueError, match="actor"):
            queues.pause_queue("default", actor)
        assert transaction_still_usable()
    row = CronJob.objects.get(name="nightly")
    assert row.paused_at is None and row.retired_at is None
    assert not Job.objects.exists() and not QueueMeta.objects.filter(paused_at__isnull=False).exists()


def test_schedule_actions__an_actor_of_200_characters_is_recorded() -> None:
    CronJobFactory(name="nightly")
    assert schedules.pause("nightly", "a" * 200).changed
    assert CronJob.objects.get(name="nightly").paused_by == "a" * 200


# --- names that cannot exist, or that are not names -----------------------------------


def _schedule_actions() -> dict[str, Callable[[Any], Any]]:
    return {
        "pause": lambda name: schedules.pause(name, "ops"),
        "resume": lambda name: schedules.resume(name, "ops"),
        "trigger": lambda name: schedules.trigger(name, "ops"),
        "remove": lambda name: schedules.remove(name, "ops"),
        "get_schedule": schedules.get_schedule,
        "retire": lambda name: owners.retire(name, actor="ops", apply=True),
        "restore": lambda name: owners.restore(name, actor="ops"),
        "adopt": lambda name: owners.adopt(name, "billing", actor="ops", apply=True),
        "cancel_cron_jobs": lambda name: queues.cancel_cron_jobs(name, "ops"),
    }


@pytest.mark.parametrize("name", ["a\x00b", "a\ud800b"], ids=["nul", "lone_surrogate"])
@pytest.mark.parametrize("action", sorted(_schedule_actions()))
def test_schedule_actions__a_name_no_row_can_hold_is_not_found(action: str, name: str) -> None:
    call = _schedule_actions()[action]
    with transaction.atomic():
        if action == "cancel_cron_jobs":  # no schedule row needed: nothing to cancel
            assert call(name) == []
        else:
            with pytest.raises(ScheduleNotFound) as caught:
                call(name)
            assert repr(name) in str(caught.value)
        assert transaction_still_usable()


@pytest.mark.parametrize("name", [5, b"nightly", ["nightly"], "", None], ids=repr)
@pytest.mark.parametrize("action", sorted(_schedule_actions()))
def test_schedule_actions__a_name_that_is_not_text_is_a_value_error(action: str, name: Any) -> None:
    CronJobFactory(name="nightly")
    with transaction.atomic():
        with pytest.raises(ValueError, match="schedule name"):
            _schedule_actions()[action](name)
        assert transaction_still_usable()


def test_ownership__an_owner_with_a_lone_surrogate_is_a_value_error() -> None:
    CronJobFactory(name="nightly")
    with pytest.raises(ValueError, match="owner"):
        owners.adopt("nightly", "bill\ud800ing", actor="ops")
    with pytest.raises(ValueError, match="owner"):
        owners.retire_owner("bill\ud800ing", actor="ops")


# --- queues and jobs --------------------------------------------------------------------


@pytest.mark.parametrize(
    "queue", [None, 5, "", "q\x00", "q\ud800", "q\x1b", "q" * 201], ids=lambda q: repr(q)[:12]
)
def test_queue_actions__a_queue_name_awa_jobs_cannot_hold_is_refused_by_name(queue: Any) -> None:
    with transaction.atomic():
        with pytest.raises(ValueError, match="queue"):
            queues.pause_queue(queue, "ops")
        assert transaction_still_usable()
    assert not QueueMeta.objects.exists()


@pytest.mark.parametrize("queue", [None, 5, "q\x00", "q\ud800"], ids=lambda q: repr(q)[:12])
def test_resume_queue__a_name_postgresql_cannot_hold_is_refused_by_name(queue: Any) -> None:
    # resume takes any stored text (a raw-SQL pause under an odd name can be
    # undone), but not what no row can hold.
    with transaction.atomic():
        with pytest.raises(ValueError, match="queue"):
            queues.resume_queue(queue, "ops")
        assert transaction_still_usable()


@pytest.mark.parametrize("job_ids", ["12", b"12", 12, [True], ["1"], [1.5]], ids=repr)
def test_cancel_jobs__ids_must_be_a_list_of_whole_numbers(job_ids: Any) -> None:
    jobs = [JobFactory() for _ in range(3)]
    with transaction.atomic():
        with pytest.raises(ValueError, match="job id"):
            queues.cancel_jobs(job_ids, "ops")
        assert transaction_still_usable()
    assert not Job.objects.filter(id__in=[j.id for j in jobs], state="cancelled").exists()


@pytest.mark.parametrize("job_id", ["abc", "1", True, None, 1.0], ids=repr)
def test_job_actions__a_job_id_that_is_not_a_whole_number_is_a_value_error(job_id: Any) -> None:
    with transaction.atomic():
        with pytest.raises(ValueError, match="job id"):
            queues.retry_job(job_id, "ops")
        with pytest.raises(ValueError, match="job id"):
            queues.cancel_job(job_id, "ops")
        assert transaction_still_usable()


def test_job_actions__an_id_beyond_bigint_is_a_job_that_does_not_exist() -> None:
    assert queues.cancel_jobs([2**70], "ops") == []
    assert queues.retry_job(2**70, "ops") is False


# --- declarations -----------------------------------------------------------------------


def declare(**changes: Any) -> Any:
    options: dict[str, Any] = {"name": "decl", "cron": "0 2 * * *", "task": RECORD}
    options.update(changes)
    return build_schedule(**options)


@pytest.mark.parametrize(
    ("field", "changes"),
    [
        # Unordered: a set of strings iterates in a per-process order (hash
        # randomisation), so replicas would declare different definitions.
        ("args", {"args": {"b", "a"}}),
        ("args", {"args": frozenset({"a"})}),
        ("args", {"args": {"a": 1}.keys()}),
        ("tags", {"tags": {"b", "a"}}),
        ("tags", {"tags": frozenset({"a"})}),
        ("tags", {"tags": {"a": 1}}),
        ("tags", {"tags": b"ab"}),
    ],
    ids=[
        "args-set",
        "args-frozenset",
        "args-dict-keys",
        "tags-set",
        "tags-frozenset",
        "tags-dict",
        "tags-bytes",
    ],
)
def test_declaration__unordered_collections_are_refused_naming_the_field(
    field: str, changes: dict[str, Any]
) -> None:
    with pytest.raises(InvalidSchedule) as caught:
        declare(**changes)
    assert (caught.value.schedule, caught.value.field) == ("decl", field)
    assert "list" in caught.value.reason


@pytest.mark.parametrize(
    ("field", "changes"),
    [
        ("args", {"args": [{1: "x"}]}),
        ("args", {"args": [{None: "x"}]}),
        ("args", {"args": [[{"ok": {2.5: "x"}}]]}),
        ("kwargs", {"kwargs": {"when": {True: 1}}}),
        ("kwargs", {"kwargs": {"k": {1: "a", "1": "b"}}}),  # would collapse to one key
        ("metadata", {"metadata": {"team": {1: "x"}}}),
    ],
    ids=[
        "args-int-key",
        "args-none-key",
        "args-deep-float-key",
        "kwargs-bool-key",
        "kwargs-colliding",
        "meta",
    ],
)
def test_declaration__nested_non_string_keys_are_refused_naming_the_field(
    field: str, changes: dict[str, Any]
) -> None:
    with pytest.raises(InvalidSchedule) as caught:
        declare(**changes)
    assert (caught.value.schedule, caught.value.field) == ("decl", field)
    assert "not a string" in caught.value.reason


def test_declaration__ordered_iterables_are_still_accepted() -> None:
    schedule = declare(args=(x for x in ["b", "a"]), tags=("b", "a"), kwargs={"k": {"n": [1, (2,)]}})
    assert schedule.args == ["b", "a"] and schedule.tags == ("b", "a")
    assert schedule.kwargs == {"k": {"n": [1, [2]]}}


NFC = unicodedata.normalize("NFC", "café-report")
NFD = unicodedata.normalize("NFD", "café-report")


@pytest.mark.parametrize(
    ("first", "second"),
    [(NFC, NFD), ("Nightly", "nightly"), ("NIGHTLY", "nightly"), ("straße", "STRASSE"), ("ﬁle", "file")],
    ids=["nfc-nfd", "case", "upper", "sharp-s", "ligature"],
)
def test_periodic__names_differing_only_in_case_or_unicode_form_are_duplicates(
    first: str, second: str
) -> None:
    periodic(first, "0 2 * * *", RECORD)
    try:
        with pytest.raises(InvalidSchedule) as caught:
            periodic(second, "0 3 * * *", RECORD)
        assert (caught.value.schedule, caught.value.field) == (second, "name")
        assert repr(first) in caught.value.reason
        assert first in registry and second not in registry
    finally:
        registry.remove(first)
        registry.remove(second)


def test_awa_schedules__names_differing_only_in_case_are_reported_by_check_e002() -> None:
    declared = {
        "Nightly": {"cron": "0 2 * * *", "task": RECORD},
        "nightly": {"cron": "0 3 * * *", "task": RECORD},
        NFD: {"cron": "0 3 * * *", "task": RECORD},
    }
    with override_settings(AWA_SCHEDULES=declared):
        messages = [m for m in run_checks() if (m.id or "").startswith("awa_django.")]
        assert [m.id for m in messages] == ["awa_django.E002"], [str(m) for m in messages]
        assert "'nightly'" in messages[0].msg and "'Nightly'" in messages[0].msg
        with pytest.raises(InvalidSchedule) as caught:
            declared_schedules()
        assert caught.value.field == "name"


def test_awa_schedules__a_name_differing_from_a_cron_py_name_only_in_form_is_e002() -> None:
    periodic(NFC, "0 2 * * *", RECORD)
    try:
        with override_settings(AWA_SCHEDULES={NFD: {"cron": "0 2 * * *", "task": RECORD}}):
            messages = [m for m in run_checks() if (m.id or "").startswith("awa_django.")]
            assert [m.id for m in messages] == ["awa_django.E002"], [str(m) for m in messages]
            with pytest.raises(InvalidSchedule) as caught:
                declared_schedules()
            assert caught.value.field == "name"
    finally:
        registry.remove(NFC)


# --- enqueue_many -----------------------------------------------------------------------


def backend() -> AwaBackend:
    found = task_backends["default"]
    assert isinstance(found, AwaBackend)
    return found


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        ((echo, ("a\x00",), {}), ValueError),
        ((echo, (float("nan"),), {}), ValueError),
        ((echo, (datetime(2026, 1, 1, tzinfo=UTC),), {}), TypeError),
        ((echo.using(priority=100, queue_name="mail"), (), {"to": "\ud800"}), ValueError),
    ],
    ids=["nul", "nan", "datetime", "surrogate"],
)
def test_enqueue_many__a_bad_call_is_named_by_position_and_task_and_nothing_is_inserted(
    bad: tuple[Any, Any, Any], error: type[Exception]
) -> None:
    calls = [(echo, (1,), {}), (report, ("r",), {}), bad, (echo, (2,), {})]
    with transaction.atomic():
        with pytest.raises(error) as caught:
            backend().enqueue_many(calls)
        assert transaction_still_usable()
    assert "call 3 of 4" in str(caught.value)
    assert "tests.testapp.backend_tasks.echo" in str(caught.value)
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    "bad",
    [
        (echo, (1,)),  # two items
        (echo, (1,), {}, None),  # four
        "abc",
        (len, (1,), {}),  # not a Task
        (echo, None, {}),  # args not a sequence
        (echo, "abc", {}),  # a string would become three arguments
        (echo, {"a": 1}, {}),
        (echo, (), [("a", 1)]),  # kwargs not a mapping
        (echo, (), {1: "a"}),  # keyword names are strings
    ],
    ids=[
        "short",
        "long",
        "str",
        "not-a-task",
        "args-none",
        "args-str",
        "args-dict",
        "kwargs-pairs",
        "kwargs-int",
    ],
)
def test_enqueue_many__a_malformed_call_is_a_type_error_naming_it(bad: Any) -> None:
    with pytest.raises(TypeError) as caught:
        backend().enqueue_many([(echo, (1,), {}), bad])
    assert "call 2 of 2" in str(caught.value)
    assert not Job.objects.exists()


@pytest.mark.parametrize("calls", [None, 5, (echo, (), {})], ids=["none", "int", "one-call-not-in-a-list"])
def test_enqueue_many__calls_must_be_an_iterable_of_calls(calls: Any) -> None:
    with pytest.raises(TypeError, match="call"):
        backend().enqueue_many(calls)
    assert not Job.objects.exists()


def test_enqueue_many__empty_list_and_generators() -> None:
    assert backend().enqueue_many([]) == []
    assert backend().enqueue_many(iter(())) == []
    results = backend().enqueue_many((echo, (i,), {}) for i in range(3))
    assert [r.args for r in results] == [[0], [1], [2]]
    assert Job.objects.count() == 3


OTHER_BACKEND_TASKS = {
    "default": {"BACKEND": "awa_django.client.backend.AwaBackend", "QUEUES": ["default", "mail", "reports"]},
    "other": {"BACKEND": "awa_django.client.backend.AwaBackend", "QUEUES": ["default"]},
}


def test_enqueue_many__a_task_of_another_backend_is_refused_naming_both() -> None:
    with override_settings(TASKS=OTHER_BACKEND_TASKS):
        elsewhere = echo.using(backend="other")
        with pytest.raises(InvalidTask) as caught:
            task_backends["default"].enqueue_many([(echo, (), {}), (elsewhere, (), {})])  # type: ignore[attr-defined]
        assert "call 2 of 2" in str(caught.value) and "'other'" in str(caught.value)
        assert not Job.objects.exists()
        # Its own backend takes it.
        assert task_backends["other"].enqueue_many([(elsewhere, (), {})])  # type: ignore[attr-defined]


# --- DESIGN.md section 1, as written ----------------------------------------------------


@pytest.fixture
def design_modules() -> Iterator[None]:
    """``reports.tasks.nightly`` and ``myapp.tasks.send_digest`` of the DESIGN examples."""
    made: dict[str, types.ModuleType] = {}
    for package, module, func in (
        ("reports", "reports.tasks", "nightly"),
        ("myapp", "myapp.tasks", "send_digest"),
    ):
        made[package] = types.ModuleType(package)
        mod = types.ModuleType(module)

        def body(**kwargs: Any) -> dict[str, Any]:
            return kwargs

        body.__module__, body.__name__, body.__qualname__ = module, func, func
        setattr(mod, func, task(body))
        made[module] = mod
    sys.modules.update(made)
    try:
        yield
    finally:
        for name in made:
            sys.modules.pop(name, None)


DESIGN_SETTINGS = {
    # The example's task modules live in installed apps; here, outside them.
    "AWA_TASK_MODULES": ["reports", "myapp"],
    "TASKS": {"default": {"BACKEND": "awa_django.client.backend.AwaBackend", "QUEUES": ["default", "mail"]}},
    "AWA_SCHEDULES": {
        "nightly-report": {
            "cron": "0 2 * * *",
            "task": "reports.tasks.nightly",
            "timezone": "Europe/Berlin",
            "kwargs": {"fmt": "pdf"},
        },
    },
}


def test_design_section_1__both_examples_work_as_written(design_modules: None) -> None:
    with override_settings(**DESIGN_SETTINGS):
        from myapp.tasks import send_digest  # type: ignore[import-not-found]

        from awa_django import periodic as public_periodic

        public_periodic(
            "daily-digest",
            "0 9 * * 1-5",
            send_digest,
            timezone="Europe/Berlin",
            kwargs={"kind": "daily"},
            missed_fire_policy="catch_up",
        )
        try:
            assert [m for m in run_checks() if (m.id or "").startswith("awa_django.E")] == []
            sync_schedules(declared_schedules())
        finally:
            registry.remove("daily-digest")
    rows = {r.name: r for r in CronJob.objects.filter(name__in=["daily-digest", "nightly-report"])}
    assert sorted(rows) == ["daily-digest", "nightly-report"]
    digest, report_row = rows["daily-digest"], rows["nightly-report"]
    assert (digest.cron_expr, digest.timezone, digest.kind) == (
        "0 9 * * 1-5",
        "Europe/Berlin",
        "myapp.tasks.send_digest",
    )
    assert (
        digest.args == {"args": [], "kwargs": {"kind": "daily"}} and digest.missed_fire_policy == "catch_up"
    )
    assert (report_row.cron_expr, report_row.timezone, report_row.kind) == (
        "0 2 * * *",
        "Europe/Berlin",
        "reports.tasks.nightly",
    )
    assert report_row.args == {"args": [], "kwargs": {"fmt": "pdf"}}
    assert report_row.missed_fire_policy == "coalesce" and report_row.queue == "default"


@pytest.mark.parametrize("count", [-1, 1001, 10**9, "3", 2.0, True], ids=repr)
def test_upcoming_fires__count_out_of_range_is_a_value_error(count: Any) -> None:
    row = CronJobFactory(name="nightly")
    with pytest.raises(ValueError, match="count must be a whole number from 0 to 1000"):
        schedules.upcoming_fires(row, count=count)


def test_upcoming_fires__count_bounds_are_accepted() -> None:
    row = CronJobFactory(name="nightly", cron_expr="* * * * *")
    after = datetime(2026, 1, 1, tzinfo=UTC)
    assert schedules.upcoming_fires(row, count=0, after=after) == []
    assert len(schedules.upcoming_fires(row, count=1000, after=after)) == 1000


@pytest.mark.parametrize("zone", [None, b"UTC", 1, ZoneInfo("Europe/Berlin")], ids=repr)
def test_declaration__a_timezone_that_is_not_a_string_is_named_with_its_type(zone: Any) -> None:
    with pytest.raises(InvalidSchedule) as caught:
        declare(timezone=zone)
    assert (caught.value.schedule, caught.value.field) == ("decl", "timezone")
    assert f"got {type(zone).__name__}" in caught.value.reason and "IANA" in caught.value.reason
