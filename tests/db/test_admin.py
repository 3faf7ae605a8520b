"""The operators' console (Django admin), through Django's test client.

Browser tests of the same pages are in test_admin_browser.py; query-count
tests with large tables in test_admin_cost.py.
"""

from __future__ import annotations

import re
import sys
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.db import DatabaseError, connection
from django.test import Client, override_settings
from django.urls import reverse

from awa_django import periodic
from awa_django.admin.common import when
from awa_django.admin.fires import dst_marked_fires
from awa_django.models import CronJob, Job, RuntimeInstance
from awa_django.operations import owners, queues, schedules
from tests.factories import CronJobFactory, JobFactory
from tests.helpers.admin import VIEW_ALL, live_leader, owned, staff, texts

pytestmark = pytest.mark.django_db

SCHEDULES = reverse("admin:awa_django_cronjob_changelist")
JOBS = reverse("admin:awa_django_job_changelist")
QUEUES = reverse("admin:awa_django_queue_changelist")
OWNERS = reverse("admin:awa_django_cronowner_changelist")
RUNTIMES = reverse("admin:awa_django_runtimeinstance_changelist")


def detail(name: str) -> str:
    return reverse("admin:awa_django_cronjob_change", args=[name])


def act(client: Client, url: str, action: str, *pks: Any, **extra: str) -> Any:
    return client.post(
        url, {"action": action, "_selected_action": [str(p) for p in pks], **extra}, follow=True
    )


def offered(client: Client, url: str) -> set[str]:
    """The actions offered to this user on this list."""
    form = client.get(url).context["action_form"]
    return set() if form is None else set(dict(form.fields["action"].choices)) - {""}


# -- schedule list -----------------------------------------------------------------


def test_schedule_list__columns_description_owner_and_last_job(admin_client: Client) -> None:
    CronJobFactory(name="digest", cron_expr="0 9 * * 1-5", timezone="Europe/Berlin", owner_id="web")
    job = schedules.trigger("digest", "alice")
    page = admin_client.get(SCHEDULES).content.decode()
    assert "digest" in page and "<code>0 9 * * 1-5</code>" in page
    assert "At 09:00, Monday through Friday" in page
    assert "Europe/Berlin" in page and ("CET" in page or "CEST" in page)  # local time beside UTC
    assert " UTC" in page
    assert f"job {job['id']}" in page and "available" in page and "(manual)" in page
    assert ">web<" in page


def test_schedule_list__badges_paused_retired_queue_paused_and_active(admin_client: Client) -> None:
    CronJobFactory(name="quiet")
    CronJobFactory(name="gone")
    CronJobFactory(name="mailer", queue="mail")
    CronJobFactory(name="fine")
    schedules.pause("quiet", "alice")
    owners.retire(actor="bob", apply=True, name="gone")
    queues.pause_queue("mail", "carol")
    page = admin_client.get(SCHEDULES).content.decode()
    assert "paused by alice" in page
    assert "awa-retired" in page and ">retired<" in page
    assert ">queue paused<" in page
    assert ">active<" in page
    # Paused rows say when they would fire; retired rows never fire.
    assert "would fire at" in page and "if resumed" in page


def test_schedule_list__overdue_needs_a_live_leader_and_the_setting(admin_client: Client) -> None:
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    CronJobFactory(name="stuck", cron_expr="* * * * *", last_enqueued_at=hour_ago)
    page = admin_client.get(SCHEDULES).content.decode()
    assert ">overdue<" not in page and "No live <code>runcron</code> leader" in page
    live_leader()
    page = admin_client.get(SCHEDULES).content.decode()
    assert ">overdue<" in page and "Live leader: <b>box:42</b>" in page
    with override_settings(AWA_OVERDUE_AFTER=2 * 3600):
        assert ">overdue<" not in admin_client.get(SCHEDULES).content.decode()


def test_schedule_list__filters_and_search(admin_client: Client) -> None:
    CronJobFactory(name="alpha", owner_id="web", queue="mail")
    CronJobFactory(name="beta")
    CronJobFactory(name="gamma")
    schedules.pause("beta", "x")
    owners.retire(actor="x", apply=True, name="gamma")

    def names(query: str) -> list[str]:
        response = admin_client.get(SCHEDULES + query)
        assert response.status_code == 200, query
        return [r.name for r in response.context["cl"].result_list]

    assert names("?state=active") == ["alpha"]
    assert names("?state=paused") == ["beta"]
    assert names("?state=retired") == ["gamma"]
    assert names("?owner_id__exact=web") == ["alpha"]
    assert names("?queue__exact=mail") == ["alpha"]
    assert names("?q=amm") == ["gamma"]


# -- detail page -------------------------------------------------------------------


def test_schedule_detail__read_only_with_next_and_last_fires(admin_client: Client) -> None:
    CronJobFactory(name="daily", cron_expr="30 2 * * *", timezone="Europe/Berlin")
    jobs = [schedules.trigger("daily", "alice") for _ in range(22)]
    Job.objects.filter(id=jobs[-1]["id"]).update(
        state="completed",
        attempted_at=datetime(2026, 1, 1, tzinfo=UTC),
        finished_at=datetime(2026, 1, 1, 0, 0, 2, 500000, tzinfo=UTC),
    )
    response = admin_client.get(detail("daily"))
    page = response.content.decode()
    assert response.status_code == 200
    assert "At 02:30" in page
    # Read-only: no editable inputs for the definition, no save, no delete.
    assert 'name="cron_expr"' not in page and 'name="_save"' not in page
    assert "deletelink" not in page
    assert page.count("02:30:00 CE") == 10  # ten fires in Berlin time (CET or CEST)
    assert page.count("manual trigger by alice") == 20  # the last 20 fires only
    assert f"job {jobs[-1]['id']}" in page and f"job {jobs[1]['id']}<" not in page
    assert "2.500 s" in page
    assert reverse("admin:awa_django_job_changelist") + "?cron_name=daily" in page


def test_schedule_detail__declaring_module_and_owner(admin_client: Client) -> None:
    CronJobFactory(name="owned-elsewhere", owner_id="billing")
    page = admin_client.get(detail("owned-elsewhere")).content.decode()
    assert "owned by billing" in page
    periodic("declared-here", "*/5 * * * *", "tests.testapp.tasks.record")
    line = sys._getframe().f_lineno - 1
    CronJobFactory(name="declared-here", cron_expr="*/5 * * * *")
    page = admin_client.get(detail("declared-here")).content.decode()
    assert f"tests/db/test_admin.py:{line}" in page


def test_dst_marked_fires__marks_the_fire_after_a_transition() -> None:
    row = CronJob(name="night", cron_expr="30 1 * * *", timezone="Europe/Berlin")
    fires = dst_marked_fires(row, datetime(2026, 3, 26, 12, 0, tzinfo=UTC), count=4)
    assert [f["local"].strftime("%m-%d %H:%M %Z") for f in fires] == [
        "03-27 01:30 CET",
        "03-28 01:30 CET",
        "03-29 01:30 CET",
        "03-30 01:30 CEST",
    ]
    assert [bool(f["dst"]) for f in fires] == [False, False, False, True]
    assert "UTC+01:00 → UTC+02:00" in fires[3]["dst"]
    assert fires[3]["utc"] == datetime(2026, 3, 29, 23, 30, tzinfo=UTC)


def test_schedule_detail__code_declared_rows_cannot_be_deleted(admin_client: Client) -> None:
    CronJobFactory(name="keep")
    assert admin_client.get(reverse("admin:awa_django_cronjob_delete", args=["keep"])).status_code == 403
    actions = (
        admin_client.get(SCHEDULES)
        .context["cl"]
        .model_admin.get_actions(admin_client.get(SCHEDULES).wsgi_request)
    )
    assert "delete_selected" not in actions


# -- actions -----------------------------------------------------------------------


def test_actions__labelled_pause_resume_trigger_now_retire_restore(admin_client: Client) -> None:
    CronJobFactory(name="x")
    response = admin_client.get(SCHEDULES)
    choices = dict(response.context["action_form"].fields["action"].choices)
    assert [
        choices[k]
        for k in (
            "pause_schedules",
            "resume_schedules",
            "trigger_schedules",
            "retire_schedules",
            "restore_schedules",
        )
    ] == ["Pause", "Resume", "Trigger now", "Retire", "Restore"]


def test_actions__pause_resume_trigger_record_the_admin_user(admin_client: Client, admin_user: User) -> None:
    CronJobFactory(name="report")
    response = act(admin_client, SCHEDULES, "pause_schedules", "report")
    assert "paused report" in texts(response)
    row = CronJob.objects.get(name="report")
    assert row.paused_by == admin_user.username and row.paused_at is not None
    response = act(admin_client, SCHEDULES, "trigger_schedules", "report")
    job = Job.objects.get(metadata__cron_name="report")
    assert job.metadata["triggered_by"] == admin_user.username
    assert any(f"job {job.id}" in t for t in texts(response))
    act(admin_client, SCHEDULES, "resume_schedules", "report")
    assert CronJob.objects.get(name="report").paused_at is None
    # The admin's history records each change too.
    history = LogEntry.objects.filter(object_id="report").order_by("id")
    assert [e.change_message for e in history][:1] == ["paused report"]
    assert {e.user_id for e in history} == {admin_user.pk}
    # Again: nothing to resume is a warning, not an error.
    assert texts(act(admin_client, SCHEDULES, "resume_schedules", "report")) == ["No change: report"]


def test_actions__retire_and_restore_confirm_with_the_dry_run_plan(
    admin_client: Client, admin_user: User
) -> None:
    CronJobFactory(name="old")
    CronJobFactory(name="already")
    owners.retire(actor="x", apply=True, name="already")
    page = act(admin_client, SCHEDULES, "retire_schedules", "old", "already")
    assert page.templates[0].name == "admin/awa_django/confirm_action.html"
    assert page.context["changes"] == ["old"] and page.context["unchanged"] == ["already"]
    assert CronJob.objects.get(name="old").retired_at is None  # nothing changed yet
    done = act(admin_client, SCHEDULES, "retire_schedules", "old", post="yes")
    assert "retired old" in texts(done)
    row = CronJob.objects.get(name="old")
    assert row.retired_at is not None and row.retired_by == admin_user.username

    page = act(admin_client, SCHEDULES, "restore_schedules", "old")
    assert page.context["changes"] == ["old"]
    assert CronJob.objects.get(name="old").retired_at is not None
    act(admin_client, SCHEDULES, "restore_schedules", "old", post="yes")
    assert CronJob.objects.get(name="old").retired_at is None


def test_actions__refused_and_failed_actions_are_messages_not_500(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    CronJobFactory(name="tomb")
    CronJobFactory(name="ok")
    owners.retire(actor="x", apply=True, name="tomb")
    response = act(admin_client, SCHEDULES, "pause_schedules", "tomb", "ok")
    assert response.status_code == 200
    assert "Refused for tomb: schedule 'tomb' is retired; restore it first" in texts(response)
    assert "paused ok" in texts(response)
    response = act(admin_client, SCHEDULES, "trigger_schedules", "tomb")
    assert any("retired" in t for t in texts(response))

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise DatabaseError("could not obtain lock on row")

    monkeypatch.setattr(schedules, "resume", broken)
    response = act(admin_client, SCHEDULES, "resume_schedules", "ok")
    assert response.status_code == 200
    assert texts(response) == ["Refused for ok: could not obtain lock on row"]


def test_actions__each_needs_its_permission_and_is_not_offered_without_it() -> None:
    CronJobFactory(name="guarded")
    viewer = staff("viewer", "view_cronjob")
    assert offered(viewer, SCHEDULES) == set()
    # Posting an action anyway changes nothing.
    act(viewer, SCHEDULES, "pause_schedules", "guarded")
    assert CronJob.objects.get(name="guarded").paused_at is None

    pauser = staff("pauser", "view_cronjob", "pause_cronjob")
    assert offered(pauser, SCHEDULES) == {"pause_schedules", "resume_schedules"}
    act(pauser, SCHEDULES, "trigger_schedules", "guarded")
    act(pauser, SCHEDULES, "retire_schedules", "guarded", post="yes")
    assert not Job.objects.exists()
    assert CronJob.objects.get(name="guarded").retired_at is None
    act(pauser, SCHEDULES, "pause_schedules", "guarded")
    assert CronJob.objects.get(name="guarded").paused_by == "pauser"

    retirer = staff("retirer", "view_cronjob", "retire_cronjob", "trigger_cronjob")
    assert offered(retirer, SCHEDULES) == {"trigger_schedules", "retire_schedules", "restore_schedules"}
    page = retirer.get(detail("guarded")).content.decode()
    assert 'value="retire_schedules"' in page and 'value="pause_schedules"' not in page


# -- jobs --------------------------------------------------------------------------


def test_jobs__filters_by_state_queue_kind_and_cron_name(admin_client: Client) -> None:
    CronJobFactory(name="a")
    CronJobFactory(name="b", queue="mail")
    ja = schedules.trigger("a", "x")
    jb = schedules.trigger("b", "x")
    other = JobFactory(kind="tests.testapp.tasks.other", state="failed")

    def ids(query: str) -> set[int]:
        response = admin_client.get(JOBS + query)
        assert response.status_code == 200, query
        return {j.id for j in response.context["cl"].result_list}

    assert ids("") == {ja["id"], jb["id"], other.id}
    assert ids("?cron_name=a") == {ja["id"]}
    assert ids("?queue=mail") == {jb["id"]}
    assert ids("?state__exact=failed") == {other.id}
    assert ids("?kind=tests.testapp.tasks.other") == {other.id}
    page = admin_client.get(JOBS + "?cron_name=a").content.decode()
    assert reverse("admin:awa_django_cronjob_change", args=["a"]) in page


CHAINED_TRACEBACK = """Traceback (most recent call last):
  File "app/tasks.py", line 3, in send
    connect()
ConnectionError: refused

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "app/tasks.py", line 5, in send
    raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed\nsecond line")
    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
smtplib.SMTPServerDisconnected: Connection unexpectedly closed
second line
"""


def test_jobs__list_shows_the_last_error_duration_and_attempt(admin_client: Client) -> None:
    start = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)
    failed = JobFactory(
        state="failed",
        attempt=2,
        max_attempts=2,
        attempted_at=start,
        finished_at=start + timedelta(seconds=2.5),
        errors=[
            {"exception_class_path": "builtins.KeyError", "traceback": "Traceback: first boom"},
            {"exception_class_path": "smtplib.SMTPServerDisconnected", "traceback": CHAINED_TRACEBACK},
        ],
    )
    cancelled = JobFactory(state="available")
    queues.cancel_jobs([cancelled.id], "alice")
    JobFactory(state="completed", attempt=1, attempted_at=start, finished_at=start + timedelta(minutes=2))
    response = admin_client.get(JOBS)
    rows = {job.id: job for job in response.context["cl"].result_list}
    admin = response.context["cl"].model_admin
    assert admin.last_error(rows[failed.id]) == (
        '<span class="awa-error-line" title="smtplib.SMTPServerDisconnected: Connection unexpectedly '
        'closed">smtplib.SMTPServerDisconnected: Connection unexpectedly closed</span>'
    )
    assert "JobCancelled: cancelled by alice" in admin.last_error(rows[cancelled.id])
    page = response.content.decode()
    assert "2.500 s" in page and "2m00s" in page and "2/2" in page
    assert "2026-01-01 08:00:02 UTC" in page  # finished at: seconds and zone
    # The list never loads the errors column itself.
    assert "errors" in rows[failed.id].get_deferred_fields()


def test_jobs__search_by_task_path_schedule_and_error_text(admin_client: Client) -> None:
    CronJobFactory(name="nightly-digest")
    digest = schedules.trigger("nightly-digest", "x")
    failed = JobFactory(
        kind="myapp.tasks.export_invoices",
        state="failed",
        errors=[{"exception_class_path": "smtplib.SMTPServerDisconnected", "traceback": CHAINED_TRACEBACK}],
    )
    odd = JobFactory(kind="myapp.tasks.other", errors={"not": "a list"})

    def ids(term: str) -> set[int]:
        response = admin_client.get(JOBS, {"q": term})
        assert response.status_code == 200, term
        return {j.id for j in response.context["cl"].result_list}

    assert ids("export_INVOICES") == {failed.id}
    assert ids("nightly-dig") == {digest["id"]}
    assert ids("unexpectedly closed") == {failed.id}
    assert ids('raise smtplib.SMTPServerDisconnected("Connection') == {failed.id}
    assert ids("myapp.tasks") == {failed.id, odd.id}
    assert ids("nothing like it") == set()


def test_jobs__schedule_filter_offers_the_schedules(admin_client: Client) -> None:
    CronJobFactory(name="alpha")
    CronJobFactory(name="beta")
    page = admin_client.get(JOBS).content.decode()
    assert "?cron_name=alpha" in page and "?cron_name=beta" in page


def test_schedule_detail__last_fires_show_the_error_and_the_zone(admin_client: Client) -> None:
    CronJobFactory(name="berlin", cron_expr="0 9 * * *", timezone="Europe/Berlin")
    JobFactory(
        state="failed",
        metadata={"cron_name": "berlin", "cron_fire_at": "2026-01-05T08:00:00+00:00"},
        errors=[{"exception_class_path": "smtplib.SMTPServerDisconnected", "traceback": CHAINED_TRACEBACK}],
    )
    page = admin_client.get(reverse("admin:awa_django_cronjob_change", args=["berlin"])).content.decode()
    fires = page[page.index('id="awa-last-fires"') :]
    assert "smtplib.SMTPServerDisconnected: Connection unexpectedly closed" in fires
    assert "2026-01-05 09:00:00 CET" in fires and "2026-01-05 08:00:00 UTC" in fires


def test_times__seconds_and_zone_on_every_page(admin_client: Client) -> None:
    """No page writes a time the way Django does by default ("Jan. 5, 2026, 8 a.m.")."""
    live_leader()
    CronJobFactory(
        name="berlin",
        cron_expr="0 9 * * *",
        timezone="Europe/Berlin",
        last_enqueued_at=datetime(2026, 1, 5, 8, 0, tzinfo=UTC),
    )
    job = JobFactory(
        attempted_at=datetime(2026, 1, 5, 8, 0, 1, tzinfo=UTC),
        finished_at=datetime(2026, 1, 5, 8, 0, 2, tzinfo=UTC),
        metadata={"cron_name": "berlin", "cron_fire_at": "2026-01-05T08:00:00+00:00"},
    )
    queues.pause_queue("default", "alice")
    owned("web", "w1")
    runtime = RuntimeInstance.objects.get()
    pages = {
        "cronjob": ["", "berlin/change/"],
        "job": ["", f"{job.id}/change/"],
        "queue": ["", "default/change/"],
        "cronowner": ["", "web/change/"],
        "runtimeinstance": ["", f"{runtime.pk}/change/"],
    }
    django_style = re.compile(r"\b(a\.m\.|p\.m\.|noon|midnight)|\b[A-Z][a-z]{2}\.? \d{1,2}, \d{4}")
    for model, paths in pages.items():
        for path in paths:
            response = admin_client.get(f"/admin/awa_django/{model}/{path}")
            assert response.status_code == 200, (model, path)
            page = re.sub(r"<pre.*?</pre>", "", response.content.decode(), flags=re.S)
            assert not django_style.search(page), (model, path, django_style.search(page))
            for moment in re.findall(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d[:.\d+-]*(?: [A-Z][\w+-]*)?", page):
                assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z][A-Za-z+\-0-9]*", moment), (
                    model,
                    path,
                    moment,
                )
    detail = admin_client.get(reverse("admin:awa_django_cronjob_change", args=["berlin"])).content.decode()
    assert "2026-01-05 09:00:00 CET" in detail and "2026-01-05 08:00:00 UTC" in detail


def test_when__the_zone_beside_utc_only_where_they_differ() -> None:
    moment = datetime(2026, 7, 1, 7, 0, 5, tzinfo=UTC)
    assert when(moment) == "2026-07-01 07:00:05 UTC"
    assert when(moment, ZoneInfo("UTC")) == "2026-07-01 07:00:05 UTC"
    assert when(moment, ZoneInfo("Europe/Berlin")) == (
        '2026-07-01 09:00:05 CEST<br><span class="awa-utc">2026-07-01 07:00:05 UTC</span>'
    )
    assert when(None) == "-"


def test_jobs__detail_shows_args_result_errors_tracebacks_and_workers(admin_client: Client) -> None:
    job = JobFactory(
        args={"args": [1], "kwargs": {"fmt": "pdf"}},
        state="failed",
        attempt=2,
        result={"rows": 3},
        worker_ids=["host:1:aa", "host:2:bb"],
        errors=[
            {
                "exception_class_path": "builtins.KeyError",
                "traceback": "Traceback: first boom",
                "attempt": 1,
                "worker_id": "host:1:aa",
            },
            {
                "exception_class_path": "builtins.ValueError",
                "traceback": "Traceback: second boom",
                "attempt": 2,
                "worker_id": "host:2:bb",
            },
        ],
    )
    page = admin_client.get(reverse("admin:awa_django_job_change", args=[job.id])).content.decode()
    for text in (
        "&quot;fmt&quot;: &quot;pdf&quot;",
        "&quot;rows&quot;: 3",
        "builtins.KeyError",
        "first boom",
        "builtins.ValueError",
        "second boom",
        "host:1:aa",
        "host:2:bb",
        "attempt 2",
    ):
        assert text in page, text


def test_jobs__cancel_and_retry_go_through_the_service_layer(admin_user: User) -> None:
    waiting = JobFactory(state="available")
    running = JobFactory(state="running")
    client = staff("ops", "view_job", "cancel_job")
    response = act(client, JOBS, "cancel_jobs", waiting.id, running.id)
    assert any("cancelled 1 job(s); 1 running or finished left alone" in t for t in texts(response))
    waiting.refresh_from_db()
    running.refresh_from_db()
    assert waiting.state == "cancelled" and "cancelled by ops" in waiting.errors[-1]["traceback"]
    assert running.state == "running"
    act(client, JOBS, "retry_jobs", waiting.id)
    waiting.refresh_from_db()
    assert waiting.state == "available"
    assert sorted(
        LogEntry.objects.filter(object_id=str(waiting.id)).values_list("change_message", flat=True)
    ) == ["cancelled", f"job {waiting.id} is available again"]

    viewer = staff("jobviewer", "view_job")
    assert offered(viewer, JOBS) == set()
    assert offered(client, JOBS) == {"cancel_jobs", "retry_jobs"}


# -- queues, runtimes --------------------------------------------------------------


def test_queues__depth_by_state_pause_and_resume() -> None:
    CronJobFactory(name="m", queue="mail")
    JobFactory(queue="default", state="available")
    JobFactory(queue="default", state="available")
    JobFactory(queue="default", state="failed")
    client = staff("qops", "view_queue", "view_cronjob", "pause_queue")
    response = client.get(QUEUES)
    rows = {q.queue: q for q in response.context["cl"].result_list}
    assert set(rows) == {"default", "mail"}
    assert (rows["default"].available, rows["default"].failed, rows["mail"].available) == (2, 1, 0)
    response = act(client, QUEUES, "pause_queues", "mail")
    assert "paused queue mail" in texts(response)
    assert queues.is_queue_paused("mail")
    assert "paused by qops" in client.get(QUEUES).content.decode()
    assert ">queue paused<" in client.get(SCHEDULES).content.decode()
    act(client, QUEUES, "resume_queues", "mail")
    assert not queues.is_queue_paused("mail")
    viewer = staff("qviewer", "view_queue")
    assert offered(viewer, QUEUES) == set()


@override_settings(
    TASKS={
        "default": {
            "BACKEND": "awa_django.client.backend.AwaBackend",
            "OPTIONS": {"QUEUE_LIMITS": {"mail": {"rate": "100/m", "concurrency": 5}}},
        }
    }
)
def test_queues__show_each_queues_limits(admin_client: Client) -> None:
    JobFactory(queue="mail", state="available")
    JobFactory(queue="default", state="available")
    page = admin_client.get(QUEUES).content.decode()
    assert "100/60s, 5 at once" in page
    detail = admin_client.get(reverse("admin:awa_django_queue_change", args=["mail"])).content.decode()
    assert "100/60s, 5 at once" in detail


def test_runtimes__leader_fresh_and_stale(admin_client: Client) -> None:
    live_leader()
    old = RuntimeInstance.objects.create(
        instance_id=uuid.uuid4(),
        hostname="old",
        pid=7,
        version="t",
        role="runtasks",
        started_at=datetime.now(UTC),
        snapshot_interval_ms=10_000,
    )
    RuntimeInstance.objects.filter(pk=old.pk).update(last_seen_at=datetime.now(UTC) - timedelta(hours=1))
    page = admin_client.get(RUNTIMES).content.decode()
    assert ">leader<" in page and ">fresh<" in page and ">stale<" in page
    assert admin_client.get(RUNTIMES + "?fresh=no").context["cl"].result_count == 1
    assert admin_client.get(reverse("admin:awa_django_runtimeinstance_add")).status_code == 403


# -- owners ------------------------------------------------------------------------


def test_owners__list_and_detail_show_the_live_plan(admin_client: Client) -> None:
    owned("web", "w1", "w2")
    response = admin_client.get(OWNERS)
    page = response.content.decode()
    assert "zero_live_declarations" in page
    page = admin_client.get(reverse("admin:awa_django_cronowner_change", args=["web"])).content.decode()
    assert "zero_live_declarations" in page and "None: with no live declaration" in page
    assert "Retire owner" in page


def test_owners__retire_and_restore_owner_confirm_first(admin_user: User, admin_client: Client) -> None:
    owned("web", "w1", "w2")
    url = reverse("admin:awa_django_cronowner_retire", args=["web"])
    page = admin_client.get(url)
    assert page.context["changes"] == ["w1", "w2"]
    assert not CronJob.objects.filter(retired_at__isnull=False).exists()
    response = admin_client.post(url, {"post": "yes"}, follow=True)
    assert "retired 2 schedule(s) of web: w1, w2" in texts(response)
    assert set(CronJob.objects.values_list("retired_by", flat=True)) == {admin_user.username}
    url = reverse("admin:awa_django_cronowner_restore", args=["web"])
    assert admin_client.get(url).context["changes"] == ["w1", "w2"]
    admin_client.post(url, {"post": "yes"})
    assert not CronJob.objects.filter(retired_at__isnull=False).exists()


def test_owners__adopt_form_names_the_expected_owner(admin_client: Client) -> None:
    owned("web", "w1")
    CronJobFactory(name="loose")
    url = reverse("admin:awa_django_cronowner_adopt")
    assert admin_client.get(url + "?name=loose").status_code == 200
    preview = admin_client.post(url, {"name": "loose", "owner": "web", "expected_owner": ""})
    assert preview.context["plan"].schedules == ["loose"] and not preview.context["plan"].applied
    # The dry run renders its plan and the confirm button, not the form again.
    page = preview.content.decode()
    assert 'id="awa-plan-changes"' in page and "loose: owner (unowned) → web" in page
    assert 'value="Yes, adopt"' in page and "Show what will change" not in page
    assert CronJob.objects.get(name="loose").owner_id is None
    admin_client.post(url, {"name": "loose", "owner": "web", "expected_owner": "", "post": "yes"})
    assert CronJob.objects.get(name="loose").owner_id == "web"
    # Transfer with the wrong expectation: refused, as a message.
    response = admin_client.post(
        url, {"name": "w1", "owner": "billing", "expected_owner": "nobody", "post": "yes"}, follow=True
    )
    assert response.status_code == 200
    assert any("ownership conflict" in t for t in texts(response))
    assert CronJob.objects.get(name="w1").owner_id == "web"


def test_owners__adopt_of_a_schedule_the_owner_holds_says_no_change(admin_client: Client) -> None:
    owned("web", "w1")
    url = reverse("admin:awa_django_cronowner_adopt")
    response = admin_client.post(url, {"name": "w1", "owner": "web", "expected_owner": "web"})
    assert texts(response) == ["No change: w1 already belongs to web"]
    assert "Show what will change" in response.content.decode()


def test_owners__lifecycle_views_need_retire_permission() -> None:
    owned("web", "w1")
    client = staff("ownerviewer", "view_cronowner")
    assert client.get(reverse("admin:awa_django_cronowner_retire", args=["web"])).status_code == 403
    assert (
        client.post(
            reverse("admin:awa_django_cronowner_adopt"), {"name": "w1", "owner": "x", "post": "yes"}
        ).status_code
        == 403
    )
    page = client.get(reverse("admin:awa_django_cronowner_change", args=["web"])).content.decode()
    assert "Retire owner" not in page
    assert CronJob.objects.get(name="w1").owner_id == "web"


def test_every_page_renders_for_a_viewer(admin_client: Client) -> None:
    CronJobFactory(name="x")
    JobFactory()
    live_leader()
    owned("web", "w")
    with connection.cursor():
        pass
    client = staff("v", *VIEW_ALL)
    for url in (
        SCHEDULES,
        JOBS,
        QUEUES,
        OWNERS,
        RUNTIMES,
        detail("x"),
        reverse("admin:awa_django_cronowner_change", args=["web"]),
        reverse("admin:awa_django_queue_change", args=["default"]),
        reverse("admin:awa_django_job_change", args=[Job.objects.get().id]),
    ):
        assert client.get(url).status_code == 200, url


def test_errors_on_every_page_are_messages_not_500(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise DatabaseError("canceling statement due to lock timeout")

    JobFactory(queue="mail", state="failed")
    job = Job.objects.get()
    owned("web", "w1")
    monkeypatch.setattr(queues, "pause_queue", broken)
    monkeypatch.setattr(queues, "retry_job", broken)
    monkeypatch.setattr(queues, "cancel_jobs", broken)
    for verb in ("adopt", "retire", "restore", "retire_owner", "restore_owner"):
        monkeypatch.setattr(owners, verb, broken)
    responses = [
        act(admin_client, QUEUES, "pause_queues", "mail"),
        act(admin_client, JOBS, "retry_jobs", job.id),
        act(admin_client, JOBS, "cancel_jobs", job.id),
        act(admin_client, SCHEDULES, "retire_schedules", "w1"),
        act(admin_client, SCHEDULES, "retire_schedules", "w1", post="yes"),
        admin_client.get(reverse("admin:awa_django_cronowner_retire", args=["web"]), follow=True),
        admin_client.post(
            reverse("admin:awa_django_cronowner_restore", args=["web"]), {"post": "yes"}, follow=True
        ),
        admin_client.post(
            reverse("admin:awa_django_cronowner_adopt"), {"name": "w1", "owner": "x"}, follow=True
        ),
    ]
    for response in responses:
        assert response.status_code == 200
        assert any("lock timeout" in t for t in texts(response)), texts(response)
    assert CronJob.objects.get(name="w1").retired_at is None


def test_schedule_list__overdue_uses_the_stored_next_fire_or_creation(admin_client: Client) -> None:
    live_leader()
    CronJobFactory(name="never-fired", cron_expr="* * * * *")
    CronJobFactory(name="stored", cron_expr="0 0 1 1 *")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE awa_cron_jobs SET created_at = now() - interval '1 day' WHERE name = 'never-fired'"
        )
        cursor.execute(
            "UPDATE awa_cron_jobs SET next_fire_at = now() - interval '10 minutes' WHERE name = 'stored'"
        )
    rows = {r.name: r for r in admin_client.get(SCHEDULES).context["cl"].result_list}
    assert rows["never-fired"]._awa.overdue_since is not None
    assert rows["stored"]._awa.overdue_since is not None
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE awa_cron_jobs SET next_fire_at = now() + interval '1 minute' WHERE name = 'stored'"
        )
    rows = {r.name: r for r in admin_client.get(SCHEDULES).context["cl"].result_list}
    assert rows["stored"]._awa.overdue_since is None


def test_schedule_names_with_url_characters_work_everywhere(admin_client: Client, admin_user: User) -> None:
    name = "reports/v2 ü?x=1&y_2"
    CronJobFactory(name=name)
    job = schedules.trigger(name, "x")
    page = admin_client.get(SCHEDULES).content.decode()
    url = reverse("admin:awa_django_cronjob_change", args=[quote(name)])
    assert url in page
    detail_page = admin_client.get(url)
    assert detail_page.status_code == 200
    jobs_url = detail_page.context["awa_jobs_url"]
    assert [j.id for j in admin_client.get(jobs_url).context["cl"].result_list] == [job["id"]]
    act(admin_client, SCHEDULES, "pause_schedules", name)
    assert CronJob.objects.get(name=name).paused_by == admin_user.username
    job_page = admin_client.get(reverse("admin:awa_django_job_change", args=[job["id"]])).content.decode()
    assert url in job_page
