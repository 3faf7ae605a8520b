"""The operators' console in a real browser: Debian's chromium, headless,
driven by Playwright against pytest-django's live server.

Never downloads a browser (``executable_path`` is the system chromium; CI
installs it with apt). ``AWA_SCREENSHOTS=1`` (``make screenshots``) also
writes the screenshots used by the operator guide to ``docs/images/``.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from playwright.sync_api import sync_playwright

from awa_django.cron import search
from awa_django.models import CronJob, CronOwner, Job, RuntimeInstance
from awa_django.operations import owners, queues, schedules
from tests.factories import CronJobFactory, JobFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
# Generous: a loaded 2-core machine renders slowly; these are deadlines, not sleeps.
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (never a downloaded browser)")
    # Playwright's sync API runs an asyncio loop in this thread; the test's own
    # ORM calls (setup, assertions, pytest-django's flush) are still plain
    # synchronous code, so allow them for as long as the browser is up.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            # Root (CI) needs --no-sandbox; small /dev/shm in containers crashes tabs otherwise.
            args = (["--no-sandbox"] if os.geteuid() == 0 else []) + ["--disable-dev-shm-usage"]
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
            try:
                yield chromium
            finally:
                chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


class Console:
    """A logged-in browser page on the live server's admin."""

    def __init__(self, browser: Any, base: str, username: str) -> None:
        self.base = base
        self.context = browser.new_context(viewport={"width": 1500, "height": 1000})
        self.context.set_default_timeout(TIMEOUT_MS)
        self.page = self.context.new_page()
        self.goto("/admin/login/")
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", "pw")
        self.page.click("input[type=submit]")
        self.page.wait_for_selector("#user-tools")

    def goto(self, path: str) -> Any:
        self.page.goto(self.base + path)
        return self.page

    def row(self, name: str) -> Any:
        return self.page.locator("#result_list tbody tr", has=self.page.locator(f"input[value='{name}']"))

    def run_action(self, label: str, *names: str) -> None:
        for name in names:
            self.page.check(f"#result_list input[name=_selected_action][value='{name}']")
        self.page.select_option("select[name=action]", label=label)
        self.page.click("button[name=index]")
        self.page.wait_for_load_state()

    def messages(self) -> str:
        return str(self.page.locator("ul.messagelist").text_content()).strip().lower()

    def close(self) -> None:
        self.context.close()


def fires_before(expression: str, zone: str, now: datetime, count: int) -> list[datetime]:
    """The ``count`` latest fire times before ``now``, newest first."""
    parsed, tz = search.parse_cron(expression), search.parse_timezone(zone)
    fires: list[datetime] = []
    until = now
    while len(fires) < count:
        fire = search.latest_fire(parsed, tz, None, until)
        assert fire is not None
        fires.append(fire)
        until = fire - timedelta(seconds=1)
    return fires


def make_user(username: str, *codenames: str, superuser: bool = False) -> User:
    if superuser:
        return User.objects.create_superuser(username, password="pw")
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="awa_django", codename__in=codenames)
    )
    return user


ATTEMPT_ERROR = {
    "exception_class_path": "smtplib.SMTPServerDisconnected",
    "traceback": 'Traceback (most recent call last):\n  File "myapp/tasks.py", line 12, in send_digest\n'
    "    connection.send_messages(messages)\n"
    "smtplib.SMTPServerDisconnected: Connection unexpectedly closed\n",
}


def realistic_data() -> None:
    """A small deployment: a live leader, a few schedules in every state, some history."""
    now = datetime.now(UTC)
    RuntimeInstance.objects.create(
        instance_id=uuid.uuid4(),
        hostname="app-1",
        pid=4242,
        version="0.1.0",
        role="runcron",
        started_at=now,
        snapshot_interval_ms=10_000,
        leader=True,
        cron_protocol=1,
    )
    digest_fires = fires_before("0 9 * * 1-5", "Europe/Berlin", now, 3)
    CronJobFactory(
        name="daily-digest",
        cron_expr="0 9 * * 1-5",
        timezone="Europe/Berlin",
        queue="mail",
        last_enqueued_at=digest_fires[0],
    )
    CronJobFactory(
        name="nightly-report",
        cron_expr="0 2 * * *",
        timezone="America/New_York",
        queue="reports",
        owner_id="web",
    )
    CronJobFactory(name="ping", cron_expr="*/5 * * * * *", last_enqueued_at=now - timedelta(seconds=3))
    CronJobFactory(name="stuck-cleanup", cron_expr="*/10 * * * *", last_enqueued_at=now - timedelta(hours=2))
    CronJobFactory(name="hourly-sync", cron_expr="0 * * * *", last_enqueued_at=now - timedelta(hours=3))
    CronJobFactory(name="old-export", cron_expr="30 4 1 * *", owner_id="web")
    owners.retire(actor="deploy", apply=True, name="old-export")
    schedules.pause("stuck-cleanup", "alice")
    # Automatic fires of the last three weekdays, oldest first: one failed after two attempts.
    for fire, state, seconds in zip(
        reversed(digest_fires), ("completed", "failed", "completed"), (0.83, 2.4, 0.91), strict=True
    ):
        failed = state == "failed"
        JobFactory(
            kind="tests.testapp.tasks.record",
            queue="mail",
            state=state,
            attempt=2 if failed else 1,
            metadata={"cron_name": "daily-digest", "cron_fire_at": fire.isoformat()},
            attempted_at=fire + timedelta(seconds=1),
            finished_at=fire + timedelta(seconds=1 + seconds),
            worker_ids=["app-2:311:9f2c41ab", "app-3:87:4be01c2d"][: 2 if failed else 1],
            errors=[
                ATTEMPT_ERROR | {"attempt": n, "worker_id": w}
                for n, w in ((1, "app-2:311:9f2c41ab"), (2, "app-3:87:4be01c2d"))
            ]
            if failed
            else [],
        )
    schedules.trigger("ping", "alice")


@pytest.fixture
def admin_console(browser: Any, live_server: Any) -> Iterator[Console]:
    make_user("admin", superuser=True)
    console = Console(browser, live_server.url, "admin")
    yield console
    console.close()


def test_admin_browser__pause_trigger_retire_restore_and_queue_pause(
    admin_console: Console, tmp_path: Path
) -> None:
    realistic_data()
    console = admin_console
    page = console.goto("/admin/awa_django/cronjob/")
    assert "Live leader: app-1:4242" in page.inner_text("#awa-leader")
    digest = console.row("daily-digest")
    assert "At 09:00, Monday through Friday" in digest.inner_text()
    assert "overdue" in console.row("hourly-sync").inner_text()
    assert "paused by alice" in console.row("stuck-cleanup").inner_text()
    assert "retired" in console.row("old-export").inner_text()
    screenshot(page, tmp_path, "admin-schedule-list.png")

    # Pause: the badge appears, and the database records the admin user.
    console.run_action("Pause", "daily-digest")
    assert "paused daily-digest" in console.messages()
    assert "paused by admin" in console.row("daily-digest").inner_text()
    assert CronJob.objects.get(name="daily-digest").paused_by == "admin"

    # Trigger now: the job shows in the job list of that schedule.
    console.run_action("Trigger now", "daily-digest")
    job_id = int(re.search(r"job (\d+)", console.messages())[1])  # type: ignore[index]
    page = console.goto("/admin/awa_django/job/?cron_name=daily-digest")
    row = page.locator("#result_list tbody tr", has=page.locator(f"a[href*='/job/{job_id}/change/']"))
    assert "available" in row.inner_text() and "manual, by admin" in row.inner_text()

    # Retire: a confirmation page with the plan; nothing changes until confirmed.
    console.goto("/admin/awa_django/cronjob/")
    console.run_action("Retire", "daily-digest")
    assert page.inner_text("#awa-plan-changes").strip() == "daily-digest"
    assert CronJob.objects.get(name="daily-digest").retired_at is None
    page.click("input[value='Yes, retire']")
    page.wait_for_load_state()
    assert "retired" in console.row("daily-digest").inner_text()
    assert "never" in console.row("daily-digest").inner_text()
    assert CronJob.objects.get(name="daily-digest").retired_by == "admin"
    page = console.goto("/admin/awa_django/cronjob/daily-digest/change/")
    assert "never fires until it is restored" in page.inner_text("#awa-next-fires")

    # Restore from the detail page, through the same confirmation.
    page.click("#awa-status button:has-text('Restore')")
    assert page.inner_text("#awa-plan-changes").strip() == "daily-digest"
    page.click("input[value='Yes, restore']")
    page.wait_for_load_state()
    assert "retired" not in console.row("daily-digest").inner_text()
    assert CronJob.objects.get(name="daily-digest").retired_at is None

    # Pause its queue: the schedule list says "queue paused".
    page = console.goto("/admin/awa_django/queue/")
    console.run_action("Pause", "mail")
    assert "paused by admin" in console.row("mail").inner_text()
    assert queues.is_queue_paused("mail")
    console.goto("/admin/awa_django/cronjob/")
    assert "queue paused" in console.row("daily-digest").inner_text()
    assert "queue paused" not in console.row("ping").inner_text()
    screenshot(console.goto("/admin/awa_django/queue/"), tmp_path, "admin-queues.png")

    # A failed job: every attempt's error, traceback and worker.
    page = console.goto("/admin/awa_django/job/?state__exact=failed")
    page.click("#result_list tbody tr a")
    page.wait_for_load_state()
    errors = page.inner_text(".field-attempt_errors")
    assert errors.count("SMTPServerDisconnected") >= 2 and "app-3:87:4be01c2d" in errors
    screenshot(page, tmp_path, "admin-job-detail.png", full_page=False)

    page = console.goto("/admin/awa_django/cronjob/daily-digest/change/")
    assert page.locator("#awa-next-fires tbody tr").count() == 10
    assert page.locator("#awa-last-fires tbody tr").count() == 4
    assert "manual trigger by admin" in page.inner_text("#awa-last-fires")
    screenshot(page, tmp_path, "admin-schedule-detail.png", full_page=False)


def test_admin_browser__a_user_without_a_permission_sees_no_such_action(
    browser: Any, live_server: Any
) -> None:
    CronJobFactory(name="guarded")
    make_user("viewer", "view_cronjob", "view_job", "view_queue")
    make_user("pauser", "view_cronjob", "pause_cronjob")

    viewer = Console(browser, live_server.url, "viewer")
    try:
        page = viewer.goto("/admin/awa_django/cronjob/")
        assert viewer.row("guarded").count() == 0  # no action checkboxes at all
        assert page.locator("select[name=action]").count() == 0
        assert "guarded" in page.inner_text("#result_list")
        page = viewer.goto("/admin/awa_django/cronjob/guarded/change/")
        assert page.locator("#awa-status button").count() == 0
        page = viewer.goto("/admin/awa_django/queue/")
        assert page.locator("select[name=action]").count() == 0
    finally:
        viewer.close()

    pauser = Console(browser, live_server.url, "pauser")
    try:
        page = pauser.goto("/admin/awa_django/cronjob/")
        labels = [o.strip() for o in page.locator("select[name=action] option").all_inner_texts()]
        assert [label for label in labels if not label.startswith("-")] == ["Pause", "Resume"]
        page = pauser.goto("/admin/awa_django/cronjob/guarded/change/")
        assert page.locator("#awa-status button").all_inner_texts() == ["Pause"]
    finally:
        pauser.close()


def screenshot(page: Any, tmp_path: Path, name: str, full_page: bool = True) -> None:
    """Always taken (it must work); kept for the docs with AWA_SCREENSHOTS=1."""
    target = DOCS_IMAGES / name if os.environ.get("AWA_SCREENSHOTS") == "1" else tmp_path / name
    target.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target), full_page=full_page)
    assert target.stat().st_size > 10_000


# The page's structure, read in the browser: the breadcrumb bar (its element,
# where it sits and how the admin's CSS styles it), the messages and the tables.
STRUCTURE_JS = """() => {
  const style = (el, ...names) => el ? names.map(n => getComputedStyle(el)[n]).join(' ') : null;
  const crumbs = document.querySelector('.breadcrumbs');
  const head = document.querySelector('#content thead th');
  return {
    crumbs: crumbs && {
      tag: crumbs.tagName, cls: crumbs.className, parent: crumbs.parentElement.tagName,
      look: style(crumbs, 'backgroundColor', 'color', 'paddingLeft', 'display'),
      home: crumbs.querySelector('a').textContent,
      steps: crumbs.tagName === 'OL' ? [...crumbs.children].every(li => li.tagName === 'LI') : true,
    },
    messages: [...document.querySelectorAll('ul.messagelist > li')].map(
      li => li.className + ' ' + style(li, 'backgroundColor', 'paddingLeft')),
    head: style(head, 'backgroundColor', 'fontSize', 'textTransform'),
    tables: [...document.querySelectorAll('#content table')].map(t => !!t.tHead || !!t.querySelector('th')),
    title: document.title,
    overflow: document.documentElement.scrollWidth - window.innerWidth,
  };
}"""


def structure(page: Any) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(STRUCTURE_JS)
    assert "Server Error" not in found["title"] and "Page not found" not in found["title"], found["title"]
    return found


def stock_admin(console: Console) -> dict[str, dict[str, Any]]:
    """The structure of stock admin pages of the running Django: a list with a
    success message, a change form and a delete confirmation (auth users)."""
    user = User.objects.create_user("bob", password="pw", is_staff=True)
    page = console.goto(f"/admin/auth/user/{user.pk}/change/")
    change = structure(page)
    page.click("input[name=_save]")
    page.wait_for_load_state()
    changelist = structure(page)
    assert changelist["messages"], "saving a user shows a message"
    confirm = structure(console.goto(f"/admin/auth/user/{user.pk}/delete/"))
    return {"list": changelist, "change": change, "confirm": confirm}


def same_structure(found: dict[str, Any], stock: dict[str, Any], where: str) -> None:
    assert found["crumbs"] == {**stock["crumbs"], "steps": True}, where
    assert found["overflow"] <= 0, (where, "wider than the window", found["overflow"])
    if found["head"] is not None:
        assert found["head"] == stock["head"] or stock["head"] is None, where
    assert all(found["tables"]), (where, "a table without header cells")
    for message in found["messages"]:
        level = message.split(" ")[0]
        same_level = [m for m in stock["messages"] if m.split(" ")[0] == level]
        assert not same_level or message == same_level[0], (where, message, same_level)


def test_admin_browser__every_page_has_the_stock_admin_structure(admin_console: Console) -> None:
    """Each awa page and each confirmation page renders (no server error) with the
    breadcrumbs, messages and tables of a stock admin page of the same Django."""
    realistic_data()
    CronOwner.objects.create(owner_id="web")
    console = admin_console
    failures: list[str] = []
    console.page.on("response", lambda r: r.status >= 400 and failures.append(f"{r.status} {r.url}"))
    stock = stock_admin(console)
    stock_list = {**stock["list"], "messages": stock["list"]["messages"]}
    job = Job.objects.filter(state="failed").get()
    runtime = RuntimeInstance.objects.get()
    pages = {
        "/admin/awa_django/cronjob/": "list",
        "/admin/awa_django/cronjob/daily-digest/change/": "change",
        "/admin/awa_django/cronjob/add/": "change",
        "/admin/awa_django/job/": "list",
        f"/admin/awa_django/job/{job.id}/change/": "change",
        "/admin/awa_django/queue/": "list",
        "/admin/awa_django/queue/mail/change/": "change",
        "/admin/awa_django/cronowner/": "list",
        "/admin/awa_django/cronowner/web/change/": "change",
        "/admin/awa_django/runtimeinstance/": "list",
        f"/admin/awa_django/runtimeinstance/{runtime.pk}/change/": "change",
        "/admin/awa_django/cronowner/adopt/": "confirm",
        "/admin/awa_django/cronowner/web/retire/": "confirm",
        "/admin/awa_django/cronowner/web/restore/": "confirm",
    }
    for path, kind in pages.items():
        same_structure(structure(console.goto(path)), stock[kind], path)

    # The confirmation pages reached through actions, and a message of each page kind.
    console.goto("/admin/awa_django/cronjob/")
    console.run_action("Retire", "daily-digest")
    assert console.page.locator("#awa-plan-changes").count() == 1
    same_structure(structure(console.page), stock["confirm"], "retire")
    console.page.click("input[value='Yes, retire']")
    console.page.wait_for_load_state()
    same_structure(structure(console.page), stock_list, "retired: list with a message")
    console.run_action("Restore", "daily-digest")
    same_structure(structure(console.page), stock["confirm"], "restore")
    page = console.goto("/admin/awa_django/cronowner/adopt/?name=ping")
    page.fill("#id_owner", "web")
    page.click("input[value='Show what will change']")
    page.wait_for_load_state()
    same_structure(structure(page), stock["confirm"], "adopt: the dry run")
    assert failures == []


def test_admin_browser__adopt_shows_the_dry_run_then_confirms(admin_console: Console) -> None:
    CronJobFactory(name="loose")
    CronJobFactory(name="owned", owner_id="web")
    page = admin_console.goto("/admin/awa_django/cronowner/adopt/?name=loose")
    page.fill("#id_owner", "billing")
    page.click("input[value='Show what will change']")
    page.wait_for_load_state()
    assert page.inner_text("#awa-plan-changes").strip() == "loose: owner (unowned) → billing"
    assert "Nothing has changed yet." in page.inner_text("#awa-adopt")
    assert CronJob.objects.get(name="loose").owner_id is None
    page.click("input[value='Yes, adopt']")
    page.wait_for_load_state()
    assert "adopted loose: it now belongs to billing" in admin_console.messages()
    assert CronJob.objects.get(name="loose").owner_id == "billing"
    # A transfer names the owner it expects; the preview says from whom to whom.
    page = admin_console.goto("/admin/awa_django/cronowner/adopt/?name=owned&expected_owner=web")
    page.fill("#id_owner", "billing")
    page.click("input[value='Show what will change']")
    page.wait_for_load_state()
    assert page.inner_text("#awa-plan-changes").strip() == "owned: owner web → billing"


def test_admin_browser__jobs_list_answers_what_failed_and_why(admin_console: Console, tmp_path: Path) -> None:
    """Error, duration and attempt columns fit a 1,500 px window; search and
    filters find the failure; the schedule page's fires show the error too."""
    realistic_data()
    console = admin_console
    page = console.goto("/admin/awa_django/job/")
    headers = [h.strip().lower() for h in page.locator("#result_list thead th").all_inner_texts()]
    for column in ("task / queue", "state", "attempt", "schedule", "finished at", "duration", "last error"):
        assert column in headers, headers
    # Every column shows: the table is no wider than its box (which would scroll) nor the window.
    fits = page.evaluate(
        """() => { const box = document.querySelector('#result_list').parentElement;
                   const right = document.querySelector('#result_list').getBoundingClientRect().right;
                   return box.scrollWidth <= box.clientWidth && right <= window.innerWidth; }"""
    )
    assert fits and structure(page)["overflow"] <= 0
    failed = page.locator("#result_list tbody tr", has=page.locator(".awa-job-failed"))
    assert "smtplib.SMTPServerDisconnected: Connection unexpectedly closed" in failed.inner_text()
    assert "2.400 s" in failed.inner_text() and "2/" in failed.inner_text()
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", failed.inner_text())
    screenshot(page, tmp_path, "admin-job-list.png", full_page=False)

    for term in ("unexpectedly closed", "daily-digest", "tests.testapp.tasks.record"):
        page.fill("#searchbar", term)
        page.press("#searchbar", "Enter")
        page.wait_for_load_state()
        assert page.locator("#result_list tbody .awa-job-failed").count() == 1, term
    page.fill("#searchbar", "no such error anywhere")
    page.press("#searchbar", "Enter")
    page.wait_for_load_state()
    assert page.locator("#result_list").count() == 0

    page = console.goto("/admin/awa_django/job/")
    for choice in ("state__exact=failed", "queue=mail", "cron_name=daily-digest"):
        page.click(f"#changelist-filter a[href*='{choice}']")
        page.wait_for_load_state()
    assert page.locator("#result_list tbody tr").count() == 1
    assert page.locator("#result_list tbody .awa-job-failed").count() == 1

    page = console.goto("/admin/awa_django/cronjob/daily-digest/change/")
    fires = page.inner_text("#awa-last-fires")
    assert "smtplib.SMTPServerDisconnected: Connection unexpectedly closed" in fires
    # Berlin's 09:00 beside UTC, to the second, the same way in the list and the fire table.
    assert re.search(r"\d{4}-\d\d-\d\d 09:00:00 CES?T\s+\d{4}-\d\d-\d\d 0[78]:00:00 UTC", fires), fires
    listed = console.goto("/admin/awa_django/cronjob/")
    assert re.search(
        r"09:00:00 CES?T\s+\d{4}-\d\d-\d\d 0[78]:00:00 UTC", console.row("daily-digest").inner_text()
    )
    assert "a.m." not in listed.inner_text("#content") and "p.m." not in listed.inner_text("#content")


def test_admin_browser__create_preview_edit_and_delete_a_runtime_schedule(
    browser: Any, live_server: Any
) -> None:
    make_user("editor", "view_cronjob", "add_cronjob", "change_cronjob", "delete_cronjob")
    editor = Console(browser, live_server.url, "editor")
    try:
        page = editor.goto("/admin/awa_django/cronjob/add/")
        page.fill("#id_name", "poll-feed")
        page.fill("#id_cron_expr", "61 * * * *")
        page.select_option("#id_task_path", "tests.testapp.tasks.record")
        page.fill("#id_call_kwargs", '{"label": "feed"}')
        page.click("input[name=_save]")
        page.wait_for_load_state()
        assert "minute" in page.inner_text(".field-cron_expr .errorlist")
        assert not CronJob.objects.filter(name="poll-feed").exists()

        # Preview: the schedule in words and its next fires, nothing saved.
        page.fill("#id_cron_expr", "*/15 9-17 * * 1-5")
        page.fill("#id_timezone", "Europe/Berlin")
        page.click("#awa-preview-button")
        page.wait_for_load_state()
        preview = page.inner_text("#awa-preview")
        assert "Every 15 minutes" in preview and "Monday through Friday" in preview
        assert page.locator("#awa-preview tbody tr").count() == 5
        assert not CronJob.objects.filter(name="poll-feed").exists()
        page.click("input[name=_save]")
        page.wait_for_load_state()
        assert "was added successfully" in editor.messages()
        row = CronJob.objects.get(name="poll-feed")
        assert (row.owner_id, row.cron_expr, row.timezone) == (
            "awa:runtime",
            "*/15 9-17 * * 1-5",
            "Europe/Berlin",
        )

        # Edit: the expression's form field is cron_expr; the history names the user.
        page = editor.goto("/admin/awa_django/cronjob/poll-feed/change/")
        page.fill("#id_cron_expr", "0 * * * *")
        page.click("input[name=_save]")
        page.wait_for_load_state()
        assert CronJob.objects.get(name="poll-feed").cron_expr == "0 * * * *"
        page = editor.goto("/admin/awa_django/cronjob/poll-feed/history/")
        assert "editor" in page.inner_text("#change-history")

        # Delete, through Django's confirmation page.
        page = editor.goto("/admin/awa_django/cronjob/poll-feed/delete/")
        page.click("input[type=submit]")
        page.wait_for_load_state()
        assert not CronJob.objects.filter(name="poll-feed").exists()
    finally:
        editor.close()
