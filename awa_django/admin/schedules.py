"""Schedules in the admin: what fires next, what fired, why a schedule is quiet."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ..cron.describe import describe_schedule
from ..declarations.declaration import registry
from ..declarations.runtime import RUNTIME_OWNER
from ..models import CronJob
from ..operations import declarations, history, owners, schedules
from ..operations.common import ActionResult
from ..terminal import printable
from .common import (
    OPERATOR_ERRORS,
    EscapedValuesFilter,
    ReadOnlyAdmin,
    actor,
    badge,
    choice_text,
    confirmation,
    has_awa_perm,
    live_leader,
    pretty_json,
    run_each,
    shown_name,
    text,
    utc,
    when,
)
from .fires import dst_marked_fires, last_fires, zone_of
from .schedule_forms import RuntimeScheduleAdminMixin
from .schedule_rows import RowInfo, ScheduleChangeList, annotate_page


class DeclaredFilter(admin.SimpleListFilter):
    """Rows that differ from this code's declarations (see ``actions.declarations``)."""

    title = "declaration"
    parameter_name = "declared"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("no", "no longer declared"), ("elsewhere", "declared here, owned elsewhere")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "no":
            return queryset.filter(declarations.undeclared_q(declarations.declared_names()))
        if self.value() == "elsewhere":
            return queryset.filter(declarations.owned_elsewhere_q(declarations.declared_names()))
        return queryset


class StateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("active", "active"), ("paused", "paused"), ("parked", "parked"), ("retired", "retired")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "active":
            return queryset.filter(paused_at__isnull=True, retired_at__isnull=True)
        if self.value() == "paused":
            return queryset.filter(paused_at__isnull=False, retired_at__isnull=True)
        if self.value() == "parked":
            return queryset.filter(parked_at__isnull=False, retired_at__isnull=True)
        if self.value() == "retired":
            return queryset.filter(retired_at__isnull=False)
        return queryset


def schedule_time(column: str, description: str) -> Callable[[Any, CronJob], SafeString | str]:
    """A read-only field showing the datetime ``column`` of a schedule in its zone,
    with UTC beside it (:func:`when`); a value no datetime holds as the database's text."""

    @admin.display(description=description, ordering=column)
    def show(model_admin: Any, row: CronJob) -> SafeString | str:
        value = getattr(row, column)
        if value is None:
            return str(getattr(row, f"{column}_text", None) or "-")
        return when(value, zone_of(row))

    return show


# Slot outcomes the schedule's page lists (awa cron history shows more).
SLOT_OUTCOMES_SHOWN = 20


@admin.register(CronJob)
class CronJobAdmin(RuntimeScheduleAdminMixin, ReadOnlyAdmin):
    """Schedule rows with operator actions: code-declared ones read-only, runtime ones editable."""

    list_display = ["schedule_name", "expression", "zone", "next_fire", "last_fire", "owner", "badges"]
    list_filter = [
        StateFilter,
        DeclaredFilter,
        ("owner_id", EscapedValuesFilter),
        ("queue", EscapedValuesFilter),
    ]
    search_fields = ["name"]
    list_per_page = 50
    actions = [
        "pause_schedules",
        "resume_schedules",
        "trigger_schedules",
        "retire_schedules",
        "restore_schedules",
    ]
    change_list_template = "admin/awa_django/cronjob/change_list.html"
    change_form_template = "admin/awa_django/cronjob/change_form.html"
    fieldsets = [
        (
            "Definition (from code)",
            {
                "fields": [
                    ("schedule_name", "owner", "declared_in"),
                    ("cron_expr_shown", "every_seconds", "anchor", "description"),
                    ("timezone_shown", "missed_fire_policy_shown"),
                    ("task", "queue_name", "priority", "max_attempts"),
                    ("overlap_shown", "starting_deadline", "jitter"),
                    "arguments",
                    ("tags_shown", "meta"),
                ]
            },
        ),
        ("Recent slots", {"fields": ["slot_outcomes"]}),
        (
            "State",
            {
                "fields": [
                    ("last_enqueued_at_shown", "next_fire_at_shown"),
                    ("paused_at_shown", "paused_by_shown"),
                    ("retired_at_shown", "retired_by_shown", "retired_revision_shown"),
                    ("parked_at_shown", "parked_reason_shown"),
                    ("created_at_shown", "updated_at_shown"),
                ]
            },
        ),
    ]
    readonly_fields = [
        "cron_expr_shown",
        "timezone_shown",
        "missed_fire_policy_shown",
        "overlap_shown",
        "tags_shown",
        "paused_by_shown",
        "retired_by_shown",
        "retired_revision_shown",
        "parked_reason_shown",
        "slot_outcomes",
        "description",
        "declared_in",
        "last_enqueued_at_shown",
        "next_fire_at_shown",
        "paused_at_shown",
        "retired_at_shown",
        "parked_at_shown",
        "created_at_shown",
        "updated_at_shown",
        "arguments",
        "meta",
        "schedule_name",
        "owner",
        "task",
        "queue_name",
    ]

    # Stored text (raw SQL may write control characters): shown escaped.
    tags_shown = text("tags")
    cron_expr_shown = text("cron_expr", "cron expression")
    timezone_shown = text("timezone")
    missed_fire_policy_shown = choice_text("missed_fire_policy", "missed fire policy")
    overlap_shown = choice_text("overlap")
    paused_by_shown = text("paused_by", "paused by")
    retired_by_shown = text("retired_by", "retired by")
    retired_revision_shown = text("retired_revision", "retired revision")
    parked_reason_shown = text("parked_reason", "parked reason")
    last_enqueued_at_shown = schedule_time("last_enqueued_at", "last enqueued at")
    next_fire_at_shown = schedule_time("next_fire_at", "next fire at (stored)")
    paused_at_shown = schedule_time("paused_at", "paused at")
    retired_at_shown = schedule_time("retired_at", "retired at")
    parked_at_shown = schedule_time("parked_at", "parked at")
    created_at_shown = schedule_time("created_at", "created at")
    updated_at_shown = schedule_time("updated_at", "updated at")

    def has_pause_permission(self, request: HttpRequest) -> bool:
        return has_awa_perm(request, "pause_cronjob")

    def has_trigger_permission(self, request: HttpRequest) -> bool:
        return has_awa_perm(request, "trigger_cronjob")

    def has_retire_permission(self, request: HttpRequest) -> bool:
        return has_awa_perm(request, "retire_cronjob")

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return ScheduleChangeList

    def get_queryset(self, request: HttpRequest) -> QuerySet[CronJob]:
        # A row written by raw SQL with an 'infinity' timestamp must show up
        # (parked, with its reason), never fail the page for every row.
        return schedules.with_safe_timestamps(super().get_queryset(request))

    # -- columns ---------------------------------------------------------------
    @admin.display(description="name", ordering="name")
    def schedule_name(self, row: CronJob) -> SafeString:
        return shown_name(row.name)

    @admin.display(description="task", ordering="kind")
    def task(self, row: CronJob) -> SafeString:
        return shown_name(row.kind)

    @admin.display(description="queue", ordering="queue")
    def queue_name(self, row: CronJob) -> SafeString:
        return shown_name(row.queue)

    @admin.display(description="args")
    def arguments(self, row: CronJob) -> SafeString:
        return pretty_json(row.args)

    @admin.display(description="metadata")
    def meta(self, row: CronJob) -> SafeString:
        return pretty_json(row.metadata)

    @admin.display(description="schedule", ordering="cron_expr")
    def expression(self, row: CronJob) -> SafeString:
        return format_html(
            '<code>{}</code><br><span class="awa-describe">{}</span>',
            printable(row.timing_text),
            printable(describe_schedule(row.cron_expr, row.every_seconds)),
        )

    @admin.display(description="slot outcomes (newest first)")
    def slot_outcomes(self, row: CronJob) -> SafeString:
        counts = history.skip_counts(row.name)
        summary = format_html(
            "Never enqueued: {} for overlap, {} for a held unique key, {} past the starting deadline.",
            counts.get("overlap", 0),
            counts.get("unique", 0),
            counts.get("deadline", 0),
        )
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    utc(o.slot),
                    o.outcome,
                    f"#{o.job_id}"
                    if o.job_id is not None
                    else f"#{o.blocked_by} was unfinished"
                    if o.blocked_by is not None
                    else "",
                )
                for o in history.slot_history(row.name, SLOT_OUTCOMES_SHOWN)
            ),
        )
        return format_html(
            '{}<table class="awa-slot-outcomes"><tr><th>slot</th><th>outcome</th><th>job</th></tr>{}</table>',
            summary,
            rows,
        )

    @admin.display(description="description")
    def description(self, row: CronJob) -> str:
        return printable(describe_schedule(row.cron_expr, row.every_seconds))

    @admin.display(description="time zone", ordering="timezone")
    def zone(self, row: CronJob) -> str:
        return printable(row.timezone)

    @admin.display(description="next fire (local / UTC)")
    def next_fire(self, row: CronJob) -> SafeString | str:
        info: RowInfo = vars(row)["_awa"]
        if row.is_retired or info.next_fire is None:
            return "never"
        text = when(info.next_fire, zone_of(row))
        if row.is_paused:
            return format_html("<i>would fire at</i> {} <i>if resumed</i>", text)
        return text

    @admin.display(description="last fire → job", ordering="last_enqueued_at")
    def last_fire(self, row: CronJob) -> SafeString | str:
        info: RowInfo = vars(row)["_awa"]
        fired = when(row.last_enqueued_at, zone_of(row)) if row.last_enqueued_at else "never"
        if info.last_job is None:
            return fired
        job_id, state, manual = info.last_job
        url = reverse("admin:awa_django_job_change", args=[job_id])
        return format_html(
            '{}<br><a href="{}">job {}</a> {}{}',
            fired,
            url,
            job_id,
            badge(state, f"job-{state}"),
            " (manual)" if manual else "",
        )

    @admin.display(description="owner", ordering="owner_id")
    def owner(self, row: CronJob) -> SafeString | str:
        return shown_name(row.owner_id) if row.owner_id else "-"

    @admin.display(description="status")
    def badges(self, row: CronJob) -> SafeString:
        info: RowInfo = vars(row)["_awa"]
        return self._badges(row, info)

    def _badges(self, row: CronJob, info: RowInfo) -> SafeString:
        items: list[str] = []
        # is_retired / is_paused: a timestamp no datetime holds ('infinity',
        # raw SQL) is loaded as None plus its text and still counts as set.
        if row.is_retired:
            items.append(badge("retired", "retired", f"since {_when(row, 'retired_at')} by {row.retired_by}"))
        if row.is_paused:
            items.append(badge(f"paused by {row.paused_by}", "paused", f"since {_when(row, 'paused_at')}"))
        if row.is_parked:
            # The leader could not evaluate this row: it does not fire until fixed.
            items.append(badge("parked", "parked", row.parked_reason or "cannot be evaluated"))
        if info.queue_paused:
            items.append(
                badge(
                    "queue paused",
                    "queue-paused",
                    f"queue {row.queue} is paused: fires pile up until it resumes",
                )
            )
        if info.overdue_since is not None:
            items.append(badge("overdue", "overdue", f"due since {utc(info.overdue_since)}"))
        if not items:
            items.append(badge("active", "active"))
        if info.mismatch is not None and info.mismatch.undeclared:
            remedy = printable(declarations.undeclared_remedy(row))  # the name, escaped
            items.append(badge("no longer declared", "stale", f"keeps firing until: {remedy}"))
        if info.mismatch is not None and info.mismatch.owned_elsewhere is not None:
            note = printable(declarations.owned_elsewhere_remedy(info.mismatch.owned_elsewhere))
            items.append(badge("declared here, owned elsewhere", "overdue", note))
        return format_html_join(" ", "{}", ((i,) for i in items))

    @admin.display(description="declared in")
    def declared_in(self, row: CronJob) -> str:
        names = declarations.declared_names()
        if names is None:
            return "unknown: a declaration of this code is invalid (see manage.py check)"
        found = declarations.mismatch(row, names)
        if found.undeclared:
            return (
                "no longer declared in this code: it keeps firing until "
                f"`{printable(declarations.undeclared_remedy(row))}`"
            )
        declared = next((s for s in registry if s.name == row.name), None)
        where = (declared.source or "this deployment") if declared else "AWA_SCHEDULES"
        if found.owned_elsewhere is not None:
            return (
                f"{where}; conflict: {printable(declarations.owned_elsewhere_remedy(found.owned_elsewhere))}"
            )
        if row.name in names:
            return where
        if row.owner_id == RUNTIME_OWNER:
            return "at runtime (no code): editable here, with manage.py awa cron edit, or the API"
        if row.owner_id:
            return printable(f"not in this process's code; owned by {row.owner_id}")
        return "not declared in this process's code"

    # -- pages -----------------------------------------------------------------
    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        leader = live_leader()
        context = {
            "awa_leader": leader,
            "awa_leader_seen": utc(leader.last_seen_at) if leader else "",
            **(extra_context or {}),
        }
        return super().changelist_view(request, context)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = dict(extra_context or {})
        row = self.get_object(request, unquote(object_id))  # as Django's own change view does
        if row is not None:
            annotate_page([row], row._state.db or "default")
            info: RowInfo = vars(row)["_awa"]
            context.update(
                awa_row=row,
                awa_badges=self._badges(row, info),
                awa_description=printable(describe_schedule(row.cron_expr, row.every_seconds)),
                # Stored text the page's headings show: escaped, as in the list.
                awa_timing=printable(row.cron_expr),
                awa_zone=printable(row.timezone),
                awa_next_fires=dst_marked_fires(row, info.now),
                awa_last_fires=last_fires(row),
                awa_actions=self._detail_actions(request, row),
                awa_jobs_url=reverse("admin:awa_django_job_changelist")
                + "?"
                + urlencode({"cron_name": row.name}),
                awa_adopt_url=(
                    reverse("admin:awa_django_cronowner_adopt")
                    + "?"
                    + urlencode({"name": row.name, "expected_owner": row.owner_id or ""})
                )
                if self.has_retire_permission(request)
                else None,
                awa_changelist_url=reverse("admin:awa_django_cronjob_changelist"),
                awa_checkbox=helpers.ACTION_CHECKBOX_NAME,
            )
        return super().change_view(request, object_id, form_url, context)

    def _detail_actions(self, request: HttpRequest, row: CronJob) -> list[tuple[str, str]]:
        """The actions this user may run on this row, for buttons on the detail page."""
        allowed = self.get_actions(request)
        wanted = ["trigger_schedules"]
        if row.is_retired:
            wanted = ["restore_schedules"]
        else:
            wanted += ["resume_schedules" if row.is_paused else "pause_schedules", "retire_schedules"]
        # Labels from the functions: get_actions() values differ between Django 6.0 and 6.1.
        return [(name, str(getattr(self, name).short_description)) for name in wanted if name in allowed]

    # -- actions ---------------------------------------------------------------
    @admin.action(description="Pause", permissions=["pause"])
    def pause_schedules(self, request: HttpRequest, queryset: QuerySet[CronJob]) -> None:
        def pause(row: CronJob) -> str | None:
            result = schedules.pause(row.name, actor(request))
            return f"paused {row.name}" if result.changed else None

        run_each(self, request, queryset.order_by("name"), pause, str)

    @admin.action(description="Resume", permissions=["pause"])
    def resume_schedules(self, request: HttpRequest, queryset: QuerySet[CronJob]) -> None:
        def resume(row: CronJob) -> str | None:
            result = schedules.resume(row.name, actor(request))
            return f"resumed {row.name}" if result.changed else None

        run_each(self, request, queryset.order_by("name"), resume, str)

    @admin.action(description="Trigger now", permissions=["trigger"])
    def trigger_schedules(self, request: HttpRequest, queryset: QuerySet[CronJob]) -> None:
        def trigger(row: CronJob) -> str:
            job = schedules.trigger(row.name, actor(request))
            return f"triggered {row.name}: job {job['id']} on queue {job['queue']}"

        run_each(self, request, queryset.order_by("name"), trigger, str)

    @admin.action(description="Retire", permissions=["retire"])
    def retire_schedules(self, request: HttpRequest, queryset: QuerySet[CronJob]) -> HttpResponse | None:
        return self._lifecycle(request, queryset, "retire")

    @admin.action(description="Restore", permissions=["retire"])
    def restore_schedules(self, request: HttpRequest, queryset: QuerySet[CronJob]) -> HttpResponse | None:
        return self._lifecycle(request, queryset, "restore")

    def _lifecycle(
        self, request: HttpRequest, queryset: QuerySet[CronJob], action: str
    ) -> HttpResponse | None:
        """Retire/restore: a confirmation page with the dry-run plan, then apply."""
        if request.POST.get("post") == "yes":

            def apply(row: CronJob) -> str | None:
                plan = _verb(action)(row.name, actor=actor(request), apply=True)
                return f"{action}d {row.name}" if plan.schedules else None

            run_each(self, request, queryset.order_by("name"), apply, str)
            return None
        names = list(queryset.order_by("name").values_list("name", flat=True))
        changes: list[str] = []
        unchanged: list[str] = []
        for name in names:
            try:
                plan = _verb(action)(name, actor=actor(request), apply=False)
            except OPERATOR_ERRORS as exc:
                self.message_user(request, f"Refused for {name}: {exc}", "error")
                continue
            (changes if plan.schedules else unchanged).append(name)
        if not changes:
            self.message_user(
                request, f"Nothing to {action}: " + (", ".join(unchanged) or "no schedule"), "warning"
            )
            return None
        return confirmation(
            request,
            self,
            title=f"{action.capitalize()} {len(changes)} schedule(s)?",
            action_label=action.capitalize(),
            explanation=RETIRE_TEXT if action == "retire" else RESTORE_TEXT,
            changes=changes,
            unchanged=unchanged,
            hidden=[("action", f"{action}_schedules"), ("post", "yes")]
            + [(helpers.ACTION_CHECKBOX_NAME, name) for name in changes],
            form_url="",
            cancel_url=reverse("admin:awa_django_cronjob_changelist"),
        )


def _verb(action: str) -> Callable[..., ActionResult]:
    """The lifecycle verb of a retire/restore action (looked up at call time)."""
    verb: Callable[..., ActionResult] = owners.retire if action == "retire" else owners.restore
    return verb


RETIRE_TEXT = (
    "Retired schedules are durable tombstones: they never fire again until restored, "
    "and their jobs already enqueued are not touched."
)
RESTORE_TEXT = (
    "Restored schedules fire from now on: retired time is never replayed "
    "(last fire becomes now); a pause is kept."
)


def _when(row: CronJob, column: str) -> str:
    """``column`` in UTC, or its raw text when no datetime can hold it."""
    value = getattr(row, column)
    return utc(value) if value is not None else str(getattr(row, f"{column}_text", None) or "-")
