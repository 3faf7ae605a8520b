"""Hostile input to the operators' console: every answer is a page or a message.

A NUL byte, a malformed id, a forged action selection or a silly page number
must never be a 500 (PostgreSQL refuses NUL in text; a bad value must not
reach a query), and every change an operator makes is in the admin history.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from awa_django.models import CronJob, CronOwner, Job
from tests.factories import CronJobFactory, JobFactory
from tests.helpers.admin import VIEW_ALL, live_leader, owned, staff, texts

pytestmark = pytest.mark.django_db

# Every awa_django changelist and the query parameters it reads: its search,
# its filters, and plain field lookups (the admin allows any local field).
PARAMS = {
    "cronjob": ["q", "state", "owner_id__exact", "queue__exact", "name", "kind__startswith"],
    "job": ["q", "state__exact", "queue", "kind", "cron_name", "kind__startswith", "metadata__cron_name"],
    "cronowner": ["q", "owner_id", "synced_hash__contains"],
    "queue": ["q", "queue", "paused_by"],
    "runtimeinstance": ["q", "role__exact", "hostname", "fresh", "version__icontains"],
}
CASES = [(model, param) for model, params in PARAMS.items() for param in params]
IDS = {"cronjob": "x", "job": "1", "cronowner": "web", "queue": "default", "runtimeinstance": "0"}


def changelist(model: str) -> str:
    return reverse(f"admin:awa_django_{model}_changelist")


def some_rows() -> None:
    CronJobFactory(name="x", owner_id="web")
    CronOwner.objects.create(owner_id="web")
    JobFactory()
    live_leader()


def refused_lookup(response: Any, url: str) -> bool:
    """Django's answer to lookup parameters it cannot use: back to the plain list."""
    return response.status_code == 302 and response["Location"] == url + "?e=1"


def test_every_awa_changelist_is_covered() -> None:
    registered = {m._meta.model_name for m in admin.site._registry if m._meta.app_label == "awa_django"}
    assert registered == set(PARAMS)


# -- 1. NUL in changelist query parameters --------------------------------------------


@pytest.mark.parametrize(("model", "param"), CASES)
def test_changelist__nul_in_a_filter_or_search_is_refused_not_500(
    admin_client: Client, model: str, param: str
) -> None:
    some_rows()
    url = changelist(model)
    for value in ("\x00", "a\x00b"):
        response = admin_client.get(url, {param: value})
        assert refused_lookup(response, url), (param, response.status_code)
    assert admin_client.get(url + "?e=1").status_code == 200


@pytest.mark.parametrize("model", PARAMS)
def test_changelist__nul_in_a_parameter_name_or_facets_is_refused(admin_client: Client, model: str) -> None:
    some_rows()
    url = changelist(model)
    assert refused_lookup(admin_client.get(url + "?a%00b=1"), url)
    assert refused_lookup(admin_client.get(url + "?_facets=1&q=%00"), url)


@pytest.mark.parametrize("model", PARAMS)
def test_changelist__nul_refused_for_a_view_only_user(model: str) -> None:
    some_rows()
    client = staff("viewer", *VIEW_ALL)
    url = changelist(model)
    assert refused_lookup(client.get(url + "?q=%00"), url)
    assert refused_lookup(client.get(url + "?q=ok&q=%00"), url)
    assert refused_lookup(client.get(url + "?" + PARAMS[model][-1] + "=%00"), url)
    assert client.get(url).status_code == 200


# -- 2. NUL and malformed ids in object URLs -----------------------------------------


BAD_IDS = ["a%00b", "a_00b", "%00", "99999999999999999999999", "-1", "not-a-uuid"]


@pytest.mark.parametrize("model", PARAMS)
@pytest.mark.parametrize("bad", BAD_IDS)
def test_object_pages__a_nul_or_malformed_id_does_not_exist(
    admin_client: Client, model: str, bad: str
) -> None:
    some_rows()
    base = changelist(model)
    for page in ("change", "history"):
        response = admin_client.get(f"{base}{bad}/{page}/", follow=True)
        assert response.status_code == 200, (page, bad)
        assert any("doesn’t exist" in t for t in texts(response)), texts(response)
    # Rows are never deleted from the admin: refused, whatever the id.
    assert admin_client.get(f"{base}{bad}/delete/").status_code == 403
    assert admin_client.post(f"{base}{bad}/delete/", {"post": "yes"}).status_code == 403


@pytest.mark.parametrize("model", PARAMS)
def test_object_pages__nul_id_for_a_view_only_user(model: str) -> None:
    some_rows()
    client = staff("viewer", *VIEW_ALL)
    response = client.get(f"{changelist(model)}a%00b/change/")
    assert response.status_code == 302


# -- 3. owner views with a NUL or malformed owner id ----------------------------------

BAD_OWNERS = ["a%00b", "a_00b", "%00", "x" * 300, "%20"]


@pytest.mark.parametrize("view", ["retire", "restore"])
@pytest.mark.parametrize("bad", BAD_OWNERS)
def test_owner_views__nul_or_malformed_owner_is_404(admin_client: Client, view: str, bad: str) -> None:
    owned("web", "w1")
    url = reverse("admin:awa_django_cronowner_changelist") + f"{bad}/{view}/"
    assert admin_client.get(url).status_code == 404
    assert admin_client.post(url, {"post": "yes"}).status_code == 404
    assert CronJob.objects.get(name="w1").retired_at is None


def test_owner_views__nul_owner_without_the_permission_is_403() -> None:
    client = staff("ownerviewer", "view_cronowner")
    url = reverse("admin:awa_django_cronowner_changelist") + "a%00b/retire/"
    assert client.get(url).status_code == 403


def test_adopt__nul_in_the_form_or_its_initial_values_is_a_form_error(admin_client: Client) -> None:
    owned("web", "w1")
    url = reverse("admin:awa_django_cronowner_adopt")
    assert (
        admin_client.get(url, {"name": "w\x001", "owner": "\x00", "expected_owner": "a\x00"}).status_code
        == 200
    )
    for field in ("name", "owner", "expected_owner"):
        data = {"name": "w1", "owner": "billing", "expected_owner": "web", "post": "yes", field: "a\x00b"}
        response = admin_client.post(url, data)
        assert response.status_code == 200 and response.context["form"].errors[field], field
    assert CronJob.objects.get(name="w1").owner_id == "web"


# -- 4. forged action selections ------------------------------------------------------

FORGED: dict[str, tuple[str, list[str]]] = {
    "job": ("cancel_jobs", ["abc", "\x00", "99999999999999999999999", "1.5", ""]),
    "cronjob": ("pause_schedules", ["a\x00b", "\x00"]),
    "queue": ("pause_queues", ["\x00", "de\x00fault"]),
}


@pytest.mark.parametrize("model", FORGED)
def test_actions__invalid_selected_pks_are_a_message_not_500(admin_client: Client, model: str) -> None:
    some_rows()
    job = Job.objects.get()
    action, forged = FORGED[model]
    url = changelist(model)
    for bad in forged:
        valid = {"job": str(job.id), "cronjob": "x", "queue": "default"}[model]
        for selected in ([bad], [valid, bad]):
            data = {"action": action, "index": "0", "_selected_action": selected}
            response = admin_client.post(url, data)
            assert response.status_code == 302, (bad, response.status_code)
            page = admin_client.get(response["Location"])
            assert any("No items have been changed" in t for t in texts(page)), texts(page)
    # Nothing changed: the valid row in a forged selection was left alone too.
    assert Job.objects.get().state == "available"
    assert CronJob.objects.get(name="x").paused_at is None
    assert not LogEntry.objects.exists()


def test_actions__forged_selection_on_a_confirmation_post_and_retry(admin_client: Client) -> None:
    some_rows()
    schedules = changelist("cronjob")
    data = {"action": "retire_schedules", "post": "yes", "_selected_action": ["x", "a\x00b"]}
    response = admin_client.post(schedules, data, follow=True)
    assert response.status_code == 200
    assert any("No items have been changed" in t for t in texts(response))
    assert CronJob.objects.get(name="x").retired_at is None
    jobs = changelist("job")
    data = {"action": "retry_jobs", "index": "0", "_selected_action": ["9" * 40]}
    response = admin_client.post(jobs, data, follow=True)
    assert response.status_code == 200 and any("No items have been changed" in t for t in texts(response))


def test_actions__forged_selection_for_a_limited_staff_user() -> None:
    some_rows()
    client = staff("pauser", "view_cronjob", "pause_cronjob")
    url = changelist("cronjob")
    data = {"action": "pause_schedules", "index": "0", "_selected_action": ["x\x00"]}
    response = client.post(url, data, follow=True)
    assert response.status_code == 200
    assert any("No items have been changed" in t for t in texts(response))
    # A valid selection still works for this user.
    client.post(url, {"action": "pause_schedules", "index": "0", "_selected_action": ["x"]})
    assert CronJob.objects.get(name="x").paused_by == "pauser"


def test_actions__valid_selection_still_acts(admin_client: Client, admin_user: User) -> None:
    some_rows()
    job = Job.objects.get()
    data = {"action": "cancel_jobs", "index": "0", "_selected_action": [str(job.id)]}
    admin_client.post(changelist("job"), data)
    assert Job.objects.get().state == "cancelled"


# -- 5. owner actions leave an audit trail ---------------------------------------------


def history(obj: Any) -> list[tuple[str, int, str]]:
    entries = LogEntry.objects.filter(object_id=str(obj.pk), content_type__model=obj._meta.model_name)
    return [(e.user.username, e.action_flag, e.get_change_message()) for e in entries.order_by("id")]


def test_owner_retire_and_restore__write_the_admin_history(admin_client: Client, admin_user: User) -> None:
    owned("web", "w1", "w2")
    owner = CronOwner.objects.get()
    url = reverse("admin:awa_django_cronowner_retire", args=["web"])
    admin_client.get(url)  # the dry run changes nothing and logs nothing
    assert not LogEntry.objects.exists()
    admin_client.post(url, {"post": "yes"})
    user = admin_user.username
    assert history(owner) == [(user, CHANGE, "retired owner web: w1, w2")]
    for name in ("w1", "w2"):
        assert history(CronJob.objects.get(name=name)) == [(user, CHANGE, "retired with owner web")]
    admin_client.post(reverse("admin:awa_django_cronowner_restore", args=["web"]), {"post": "yes"})
    assert history(owner)[-1] == (user, CHANGE, "restored owner web: w1, w2")
    assert history(CronJob.objects.get(name="w1"))[-1] == (user, CHANGE, "restored with owner web")
    # Nothing left to restore: no change, no entry.
    admin_client.post(reverse("admin:awa_django_cronowner_restore", args=["web"]), {"post": "yes"})
    assert len(history(owner)) == 2


def test_owner_adopt__writes_the_admin_history(admin_client: Client, admin_user: User) -> None:
    owned("web", "w1")
    CronJobFactory(name="loose")
    url = reverse("admin:awa_django_cronowner_adopt")
    admin_client.post(url, {"name": "loose", "owner": "web", "expected_owner": ""})  # preview
    assert not LogEntry.objects.exists()
    admin_client.post(url, {"name": "loose", "owner": "web", "expected_owner": "", "post": "yes"})
    admin_client.post(url, {"name": "w1", "owner": "billing", "expected_owner": "web", "post": "yes"})
    user = admin_user.username
    assert history(CronJob.objects.get(name="loose")) == [
        (user, CHANGE, "adopted by owner web (was unowned)")
    ]
    assert history(CronJob.objects.get(name="w1")) == [(user, CHANGE, "adopted by owner billing (was web)")]
    # The owner's history names what it gained.
    assert history(CronOwner.objects.get(owner_id="billing")) == [(user, CHANGE, "adopted w1 (was web)")]
    assert history(CronOwner.objects.get(owner_id="web")) == [(user, CHANGE, "adopted loose (was unowned)")]
    # A refused transfer writes nothing.
    admin_client.post(url, {"name": "w1", "owner": "x", "expected_owner": "nobody", "post": "yes"})
    assert len(history(CronJob.objects.get(name="w1"))) == 1


def test_owner_history_page_lists_the_entries(admin_client: Client, admin_user: User) -> None:
    owned("web", "w1")
    admin_client.post(reverse("admin:awa_django_cronowner_retire", args=["web"]), {"post": "yes"})
    page = admin_client.get(reverse("admin:awa_django_cronowner_history", args=["web"])).content.decode()
    assert "retired owner web: w1" in page and admin_user.username in page


# -- other hostile parameters ------------------------------------------------------------

HOSTILE = [
    "p=999999999999999999999",
    "p=-1",
    "p=abc",
    "p=" + "9" * 5000,
    "o=abc",
    "o=99",
    "o=-",
    "o=1.-2.x",
    "o=999999999999999999999",
    "all=",
    "e=1",
    "_to_field=secret",
]
FIELD_HOSTILE = {
    "cronjob": [
        "created_at__gte=2024-13-45",
        "created_at__year=99999999999",
        "created_at__year=abc",
        "last_enqueued_at__date=nope",
        "priority__gt=99999999999999999999",
        "priority=x",
        "tags=abc",
        "tags__contains=x",
        "args__has_key=a",
        "created_at__gte=0000-01-01",
    ],
    "job": [
        "run_at__gte=2024-13-45",
        "run_at__year=99999999999",
        "run_at__year=-5",
        "id=99999999999999999999",
        "id__in=1,abc",
        "id__gt=99999999999999999999",
        "worker_ids=x",
        "tags__len=x",
        "finished_at__date=2024-02-30",
        "attempt__lt=1e9",
    ],
    "cronowner": ["agreed_since__gte=nope", "agreed_since__year=10000", "evidence_until__date=x"],
    "queue": ["available__gt=99999999999999999999", "paused_at__year=99999", "failed=abc"],
    "runtimeinstance": [
        "last_seen_at__year=99999999999",
        "pid=99999999999999",
        "leader__exact=maybe",
        "instance_id=nope",
        "queues__contains=x",
        "snapshot_interval_ms=9e99",
        "started_at__date=nope",
        "is_fresh=x",
    ],
}


@pytest.mark.parametrize("model", PARAMS)
def test_changelist__hostile_pages_ordering_and_lookups_are_never_500(
    admin_client: Client, model: str
) -> None:
    some_rows()
    url = changelist(model)
    broken = []
    for query in HOSTILE + FIELD_HOSTILE[model]:
        try:
            status = admin_client.get(url + "?" + query).status_code
        except Exception as exc:  # the test client re-raises a view's exception
            status = f"{type(exc).__name__}: {exc}"
        if status not in (200, 302, 400):
            broken.append((query, status))
    assert broken == []
