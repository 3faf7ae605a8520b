"""Runtime schedules in the admin (test client): add, preview, change, delete, permissions.

Proves: the add page offers the registered tasks and validates as a
declaration, naming the field; Preview shows the schedule in words and its
next fires and saves nothing; each change goes through the service layer and
is in the admin history with the user; code-declared rows stay read-only and
say where they are declared; each verb needs its own permission; an interval
schedule (every) is added, previewed in words and changed like an expression.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry

from awa_django.declarations.runtime import RUNTIME_OWNER
from awa_django.models import CronJob
from awa_django.operations.runtime_schedules import create_schedule
from tests.factories import CronJobFactory
from tests.helpers.admin import VIEW_ALL, staff

pytestmark = pytest.mark.django_db

ADD_URL = "/admin/awa_django/cronjob/add/"
TASK = "tests.testapp.tasks.record"
EDITOR = (*VIEW_ALL, "add_cronjob", "change_cronjob", "delete_cronjob")


def change_url(name: str) -> str:
    return f"/admin/awa_django/cronjob/{name}/change/"


def form_data(**overrides: Any) -> dict[str, Any]:
    data = {
        "name": "poll",
        "cron_expr": "*/5 * * * *",
        "timezone": "Europe/Berlin",
        "missed_fire_policy": "coalesce",
        "task_path": TASK,
        "call_args": "[]",
        "call_kwargs": '{"label": "a"}',
        "queue": "",
        "priority": "",
        "max_attempts": "",
    }
    data.update(overrides)
    return data


def test_add__offers_registered_tasks_and_creates_through_the_service_layer() -> None:
    client = staff("alice", *EDITOR)
    page = client.get(ADD_URL)
    assert page.status_code == 200
    body = page.content.decode()
    assert 'name="cron_expr"' in body and f'value="{TASK}"' in body
    assert 'value="tests.testapp.tasks.send_mail"' in body
    response = client.post(ADD_URL, form_data())
    assert response.status_code == 302, response.content.decode()[:2000]
    row = CronJob.objects.get(name="poll")
    assert (row.owner_id, row.cron_expr, row.timezone, row.kind) == (
        RUNTIME_OWNER,
        "*/5 * * * *",
        "Europe/Berlin",
        TASK,
    )
    assert row.args == {"args": [], "kwargs": {"label": "a"}}
    entry = LogEntry.objects.get(object_id="poll")
    assert entry.action_flag == ADDITION and entry.user.get_username() == "alice"


def test_add__preview_shows_words_and_next_fires_and_saves_nothing() -> None:
    client = staff("alice", *EDITOR)
    response = client.post(ADD_URL, form_data(_preview="Preview"))
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="awa-preview"' in body and "Preview (not saved)" in body
    assert "Every 5 minutes" in body or "every 5 minutes" in body.lower()
    assert body.count("CET") + body.count("CEST") >= 5  # five fires in local time
    assert not CronJob.objects.exists()


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"cron_expr": "61 * * * *"}, "cron_expr", "minute"),
        ({"timezone": "Mars/Olympus"}, "timezone", "Mars/Olympus"),
        ({"call_kwargs": "[1]"}, "call_kwargs", "dict"),
        ({"call_args": "{nope"}, "call_args", "not JSON"),
        ({"queue": "nowhere"}, "queue", "nowhere"),
        ({"jitter": "600"}, "jitter", "gap"),
        ({"starting_deadline": "-5"}, "starting_deadline", "more than 0"),
    ],
)
def test_add__validates_as_a_declaration(overrides: dict[str, str], field: str, message: str) -> None:
    client = staff("alice", *EDITOR)
    response = client.post(ADD_URL, form_data(**overrides))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert field in errors and message in " ".join(errors[field]), errors
    assert not CronJob.objects.exists()


def test_add_and_change__the_execution_policies_are_stored_and_cleared() -> None:
    client = staff("alice", *EDITOR)
    policies = {"overlap": "skip", "starting_deadline": "90", "jitter": "30"}
    response = client.post(ADD_URL, form_data(**policies))
    assert response.status_code == 302, response.content.decode()[:2000]
    row = CronJob.objects.get(name="poll")
    assert (row.overlap, row.starting_deadline, row.jitter) == ("skip", 90.0, 30.0)
    cleared = {"overlap": "allow", "starting_deadline": "", "jitter": "0"}
    response = client.post(change_url("poll"), form_data(name="", **cleared))
    assert response.status_code == 302, response.content.decode()[:2000]
    row.refresh_from_db()
    assert (row.overlap, row.starting_deadline, row.jitter) == ("allow", None, 0.0)


def test_add__a_code_declared_name_is_refused_saying_where() -> None:
    CronJobFactory(name="poll", owner_id="billing")
    client = staff("alice", *EDITOR)
    response = client.post(ADD_URL, form_data())
    errors = response.context["adminform"].form.errors
    assert "owner 'billing'" in " ".join(errors["name"])


def test_change_and_delete__runtime_rows_through_the_service_layer_with_history() -> None:
    create_schedule("poll", "* * * * *", TASK, actor="setup")
    client = staff("bob", *EDITOR)
    page = client.get(change_url("poll"))
    assert 'name="cron_expr"' in page.content.decode()
    response = client.post(change_url("poll"), form_data(name="", cron_expr="0 * * * *"))
    assert response.status_code == 302, response.content.decode()[:2000]
    row = CronJob.objects.get(name="poll")
    assert row.cron_expr == "0 * * * *" and row.owner_id == RUNTIME_OWNER
    assert LogEntry.objects.get(object_id="poll", action_flag=CHANGE).user.get_username() == "bob"
    response = client.post("/admin/awa_django/cronjob/poll/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not CronJob.objects.filter(name="poll").exists()
    assert LogEntry.objects.get(object_id="poll", action_flag=DELETION).user.get_username() == "bob"


def test_code_declared_rows_stay_read_only_and_say_where_declared() -> None:
    CronJobFactory(name="nightly")
    client = staff("bob", *EDITOR)
    page = client.get(change_url("nightly")).content.decode()
    assert 'name="cron_expr"' not in page
    assert "no longer declared in this code" in page  # an unowned row no code declares
    assert client.post(change_url("nightly"), form_data(name="")).status_code == 403
    assert client.post("/admin/awa_django/cronjob/nightly/delete/", {"post": "yes"}).status_code == 403
    assert CronJob.objects.filter(name="nightly").exists()


def test_each_verb_needs_its_permission() -> None:
    create_schedule("poll", "* * * * *", TASK, actor="setup")
    viewer = staff("viewer", *VIEW_ALL)
    assert viewer.get(ADD_URL).status_code == 403
    assert 'name="cron_expr"' not in viewer.get(change_url("poll")).content.decode()
    assert viewer.post("/admin/awa_django/cronjob/poll/delete/", {"post": "yes"}).status_code == 403
    adder = staff("adder", *VIEW_ALL, "add_cronjob")
    assert adder.get(ADD_URL).status_code == 200
    assert adder.post(change_url("poll"), form_data(name="")).status_code == 403


def test_owners_page__shows_the_runtime_owner() -> None:
    create_schedule("poll", "* * * * *", TASK, actor="setup")
    client = staff("viewer", *VIEW_ALL)
    body = client.get("/admin/awa_django/cronowner/").content.decode()
    assert 'id="awa-runtime-owner"' in body and "awa:runtime" in body and "1 runtime schedule" in body
    assert "never retires them" in body


def test_add_and_change__an_interval_schedule_in_words_with_its_next_fires() -> None:
    client = staff("alice", *EDITOR)
    preview = client.post(ADD_URL, form_data(cron_expr="", every_seconds="90", _preview="Preview"))
    body = preview.content.decode()
    assert preview.status_code == 200 and "every 90 seconds" in body
    assert body.count("CET") + body.count("CEST") >= 5
    both = client.post(ADD_URL, form_data(every_seconds="90"))
    assert "every_seconds" in both.context["adminform"].form.errors
    response = client.post(ADD_URL, form_data(cron_expr="", every_seconds="90"))
    assert response.status_code == 302, response.content.decode()[:2000]
    row = CronJob.objects.get(name="poll")
    assert (row.cron_expr, row.every_seconds) == (None, 90)
    page = client.get(change_url("poll")).content.decode()
    assert "every 90 seconds" in page
    response = client.post(change_url("poll"), form_data(name="", cron_expr="", every_seconds="120"))
    assert response.status_code == 302
    assert CronJob.objects.get(name="poll").every_seconds == 120


def test_add__a_name_differing_only_in_case_is_a_form_error_not_a_500() -> None:
    create_schedule("report-acme", "* * * * *", TASK, actor="setup")
    client = staff("alice", *EDITOR)
    response = client.post(ADD_URL, form_data(name="Report-Acme"))
    assert response.status_code == 200
    errors = " ".join(response.context["adminform"].form.errors["name"])
    assert "'report-acme'" in errors and "case" in errors
    assert not CronJob.objects.filter(name="Report-Acme").exists()
    assert not LogEntry.objects.filter(action_flag=ADDITION).exists()


@pytest.mark.parametrize("field", ["call_args", "call_kwargs"])
def test_add__deeply_nested_json_is_a_form_error_not_a_500(field: str) -> None:
    client = staff("alice", *EDITOR)
    response = client.post(ADD_URL, form_data(**{field: "[" * 100_000 + "]" * 100_000}))
    assert response.status_code == 200
    assert "nested too deeply" in " ".join(response.context["adminform"].form.errors[field])
    assert not CronJob.objects.exists()


def test_a_write_the_service_layer_refuses_after_validation_is_a_message_without_history(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A peer retires or deletes the row between the form's validation and its save.
    from awa_django.admin import schedule_forms
    from awa_django.exceptions import OperationRefused

    def refused(name: str, **kwargs: Any) -> None:
        raise OperationRefused(f"schedule {name!r} is retired; restore it first")

    create_schedule("poll", "* * * * *", TASK, actor="setup")
    monkeypatch.setattr(schedule_forms, "update_schedule", refused)
    monkeypatch.setattr(schedule_forms, "delete_schedule", refused)
    client = staff("bob", *EDITOR)
    response = client.post(change_url("poll"), form_data(name="", cron_expr="0 * * * *"), follow=True)
    texts = [str(m) for m in response.context["messages"]]
    assert any("is retired; restore it first" in text for text in texts)
    assert not any("successfully" in text for text in texts)
    response = client.post("/admin/awa_django/cronjob/poll/delete/", {"post": "yes"}, follow=True)
    texts = [str(m) for m in response.context["messages"]]
    assert any("is retired; restore it first" in text for text in texts)
    assert not any("successfully" in text for text in texts)
    assert CronJob.objects.get(name="poll").cron_expr == "* * * * *"
    assert not LogEntry.objects.filter(action_flag__in=[CHANGE, DELETION]).exists()
