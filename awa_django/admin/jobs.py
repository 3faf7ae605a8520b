"""Jobs in the admin: what ran, how it went, every attempt's error; cancel and retry.

``awa_jobs`` grows large: the list never counts it exactly (an estimate from
the planner's statistics, or a count capped at :data:`COUNT_CAP`).
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from functools import cached_property
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.core.paginator import Paginator
from django.db import connections, router
from django.db.models import Q, QuerySet
from django.db.models.fields.json import KT
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from .. import contract
from ..db import jsonb
from ..db.timestamps import shown as invalid_shown
from ..db.timestamps import with_safe_timestamps
from ..models import CronJob, Job, JobState, QueueMeta
from ..operations import queues
from ..store import jobs_admin
from ..terminal import printable, printable_lines
from .common import (
    ReadOnlyAdmin,
    actor,
    badge,
    has_awa_perm,
    log_changes,
    pretty_json,
    run_each,
    seconds,
    shown_name,
    text,
    timestamp,
    when,
)

# Above this many matching rows the list says "more than N" instead of counting.
COUNT_CAP = 10_000

# States of a job that has not started its next attempt yet.
WAITING_STATES = (JobState.AVAILABLE, JobState.SCHEDULED, JobState.RETRYABLE)

# The schedule filter offers at most this many names (any other works as ?cron_name=).
SCHEDULE_CHOICES = 100

# The end of a traceback the list shows, where Python writes the exception's
# own lines; the search reads as much of each of the latest SEARCHED_ERRORS
# attempts (store.jobs_admin.errors_text), so a search costs the same
# whatever the rows hold (bench/admin_search.py).
ERROR_TAIL_CHARS = 2000
SEARCHED_ERRORS = 100


def with_last_error(queryset: QuerySet[Job]) -> QuerySet[Job]:
    """``queryset`` with what :func:`error_line` needs and the latest attempt's duration."""
    return queryset.annotate(
        awa_error_class=jobs_admin.last_error_class(jsonb.max_bytes()),
        awa_error_tail=jobs_admin.last_error_tail(jsonb.max_bytes(), ERROR_TAIL_CHARS),
        awa_duration=jobs_admin.duration(),
    )


def error_line(job: Job) -> str:
    """The first line of the latest attempt's exception (``Class: message``), or "".

    A traceback ends with the exception's lines after its last indented frame
    line; an entry without frames (a cancel, a lost worker) is its own text.
    """
    class_path = getattr(job, "awa_error_class", None)
    tail = getattr(job, "awa_error_tail", None)
    if not class_path and not tail:
        return ""
    name = str(class_path or "").rpartition(".")[2]
    lines = [line for line in str(tail or "").splitlines() if line.strip()]
    frames = [i for i, line in enumerate(lines) if line[:1].isspace() or line.startswith("Traceback (")]
    after = lines[frames[-1] + 1 :] if frames else lines
    first = after[0].strip() if after else ""
    if not name or first.startswith((str(class_path), name)):
        return first or name
    return f"{name}: {first}" if first else name


def fire_time(value: Any, zone: tzinfo | None = None) -> SafeString | str:
    """A ``cron_fire_at`` from a job's metadata (ISO text) as :func:`~.common.when` writes it."""
    try:
        return when(datetime.fromisoformat(str(value)), zone)
    except ValueError:
        return printable(value)


class EstimatedCountPaginator(Paginator):  # type: ignore[type-arg]
    """Counts at most ``COUNT_CAP + 1`` rows; beyond that, estimates.

    The unfiltered list uses ``pg_class.reltuples`` (kept by autovacuum and
    ANALYZE); a filtered list past the cap reports the cap. ``estimate``
    ("about", "more than" or "") tells the template how to word the count.
    """

    estimate = ""

    @cached_property
    def count(self) -> int:
        queryset: QuerySet[Job] = self.object_list  # type: ignore[assignment]
        capped = int(queryset[: COUNT_CAP + 1].count())  # SELECT COUNT(*) FROM (... LIMIT n)
        if capped <= COUNT_CAP:
            return capped
        if not queryset.query.where:
            with connections[queryset.db].cursor() as cursor:
                estimate = jobs_admin.estimated_count(cursor)
            if estimate is not None and estimate > capped:
                self.estimate = "about"
                return estimate
        self.estimate = "more than"
        return COUNT_CAP


class QueueFilter(admin.SimpleListFilter):
    """Queues known without scanning jobs: configured, operated on, or scheduled."""

    title = "queue"
    parameter_name = "queue"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        names: set[str] = set()
        for backend in getattr(settings, "TASKS", {}).values():
            names.update(backend.get("QUEUES") or [])
        with connections[router.db_for_read(QueueMeta)].cursor() as cursor:
            names.update(jobs_admin.known_queue_names(cursor))
        if self.value():
            names.add(str(self.value()))
        return [(n, printable(n)) for n in sorted(names)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(queue=self.value()) if self.value() else queryset


class KindFilter(admin.SimpleListFilter):
    """Task kinds of the schedules (any other kind works as ``?kind=``)."""

    title = "kind"
    parameter_name = "kind"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        with connections[router.db_for_read(CronJob)].cursor() as cursor:
            kinds = jobs_admin.schedule_kinds(cursor)
        if self.value():
            kinds.add(str(self.value()))
        return [(k, printable(k)) for k in sorted(kinds)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(kind=self.value()) if self.value() else queryset


class CronNameFilter(admin.SimpleListFilter):
    """``?cron_name=NAME``: one schedule's fires; offers the first
    :data:`SCHEDULE_CHOICES` schedules by name (any other works in the URL)."""

    title = "schedule"
    parameter_name = "cron_name"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        with connections[router.db_for_read(CronJob)].cursor() as cursor:
            names = jobs_admin.first_schedule_names(cursor, SCHEDULE_CHOICES)
        if self.value():
            names.add(str(self.value()))
        return [(n, printable(n)) for n in sorted(names)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if not self.value():
            return queryset
        # Written so the partial index awa_jobs_cron_name_id applies.
        filtered: QuerySet[Any] = queryset.alias(cron_key=KT("metadata__cron_name")).filter(
            metadata__has_key=contract.CRON_NAME_KEY, cron_key=self.value()
        )
        return filtered


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    # Fits a 1,500 px window beside Django's navigation and filters: the queue
    # goes under the task, and when a waiting job is due under its state.
    list_display = [
        "id",
        "task_and_queue",
        "state_and_due",
        "attempts",
        "schedule",
        "finished_at_shown",
        "duration",
        "last_error",
    ]
    list_filter = ["state", QueueFilter, CronNameFilter, KindFilter]
    # Searched by get_search_results: task path, schedule name, error text.
    search_fields = ["kind"]
    search_help_text = "Task path, schedule name or error (class, or the end of an attempt's traceback)."
    list_per_page = 50
    ordering = ["-id"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    # Facet counts would count the whole (large) table once per filter.
    show_facets = admin.ShowFacets.NEVER
    actions = ["cancel_jobs", "retry_jobs"]
    fieldsets = [
        (None, {"fields": [("id", "state", "attempts", "queue_name", "priority"), ("task", "schedule")]}),
        ("Outcome", {"fields": ["attempt_errors", "outcome", "worker_ids_shown"]}),
        ("Input", {"fields": ["arguments", "tags_shown", "meta"]}),
        (
            "Times",
            {
                "fields": [
                    ("run_at_shown", "created_at_shown"),
                    ("attempted_at_shown", "finished_at_shown", "heartbeat_at_shown"),
                ]
            },
        ),
    ]
    readonly_fields = [
        "worker_ids_shown",
        "tags_shown",
        "schedule",
        "attempts",
        "arguments",
        "outcome",
        "attempt_errors",
        "meta",
        "task",
        "queue_name",
        "run_at_shown",
        "created_at_shown",
        "attempted_at_shown",
        "finished_at_shown",
        "heartbeat_at_shown",
    ]

    run_at_shown = timestamp("run_at", "run at")
    created_at_shown = timestamp("created_at", "created at")
    attempted_at_shown = timestamp("attempted_at", "attempted at")
    finished_at_shown = timestamp("finished_at", "finished at")
    heartbeat_at_shown = timestamp("heartbeat_at", "heartbeat at")
    # Stored text shown escaped (raw SQL may write control characters).
    worker_ids_shown = text("worker_ids", "worker ids")
    tags_shown = text("tags")

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return has_awa_perm(request, "cancel_job")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Job]:
        # A row holding 'infinity' (raw SQL, or stored before the check of
        # migration 0024) shows up flagged, never fails the page for every row.
        queryset: QuerySet[Job] = with_safe_timestamps(super().get_queryset(request))
        match = request.resolver_match
        if match is not None and match.url_name == "awa_django_job_changelist":
            # The list shows none of these; each may be up to AWA_MAX_ARGS_BYTES
            # (or, written by raw SQL, any size): never loaded for 50 rows.
            queryset = with_last_error(queryset.defer("args", "result", "errors"))
        return queryset

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """The whole term, case-insensitively, in the task path, the schedule
        name or an attempt's error: the class, or the end of the traceback
        (``ERROR_TAIL_CHARS``), of each of the latest ``SEARCHED_ERRORS``
        attempts (see :func:`awa_django.store.jobs_admin.errors_text`)."""
        term = search_term.strip()
        if term:
            queryset = queryset.alias(
                awa_cron_key=KT("metadata__cron_name"),
                awa_errors_text=jobs_admin.errors_text(jsonb.max_bytes(), ERROR_TAIL_CHARS, SEARCHED_ERRORS),
            ).filter(
                Q(kind__icontains=term) | Q(awa_cron_key__icontains=term) | Q(awa_errors_text__icontains=term)
            )
        return super().get_search_results(request, queryset, "")

    @admin.display(description="duration", ordering="awa_duration")
    def duration(self, job: Job) -> str:
        value = getattr(job, "awa_duration", None)
        return seconds(value.total_seconds()) if value is not None else "-"

    @admin.display(description="last error")
    def last_error(self, job: Job) -> SafeString | str:
        line = error_line(job)
        if not line:
            return "-"
        return format_html(
            '<span class="awa-error-line" title="{}">{}</span>', printable(line), printable(line)
        )

    @admin.display(description="task", ordering="kind")
    def task(self, job: Job) -> SafeString:
        return shown_name(job.kind)

    @admin.display(description="task / queue", ordering="kind")
    def task_and_queue(self, job: Job) -> SafeString:
        # The dotted path may break after each dot: the column stays narrow, the name whole.
        return format_html(
            '<span class="awa-path">{}</span><br><span class="awa-utc">queue {}</span>',
            shown_name(job.kind, break_after="."),
            shown_name(job.queue),
        )

    @admin.display(description="state", ordering="state")
    def state_and_due(self, job: Job) -> SafeString:
        """The state; for a job not started yet, when it is due; for a running one, since when."""
        if job.state in WAITING_STATES:
            word, column = "due", "run_at"
        elif job.state == JobState.RUNNING:
            word, column = "since", "attempted_at"
        else:
            return format_html("{}", badge(job.state, f"job-{job.state}"))
        moment: datetime | None = getattr(job, column)
        return format_html(
            '{} <span class="awa-utc">{}</span><br><span class="awa-utc">{}</span>',
            badge(job.state, f"job-{job.state}"),
            word,
            invalid_shown(job, column) or when(moment),
        )

    @admin.display(description="queue", ordering="queue")
    def queue_name(self, job: Job) -> SafeString:
        return shown_name(job.queue)

    @admin.display(description="attempt")
    def attempts(self, job: Job) -> str:
        return f"{job.attempt}/{job.max_attempts}"

    @admin.display(description="schedule")
    def schedule(self, job: Job) -> SafeString | str:
        name = job.cron_name
        if not name:
            return "-"
        url = reverse("admin:awa_django_cronjob_change", args=[quote(name)])
        metadata = job.metadata  # a dict: cron_name found a name in it
        fire = (
            fire_time(metadata[contract.CRON_FIRE_AT_KEY])
            if metadata.get(contract.CRON_FIRE_AT_KEY)
            else (
                f"manual, by {metadata.get(contract.TRIGGERED_BY_KEY, '?')}"
                if metadata.get(contract.TRIGGERED_MANUALLY_KEY)
                else ""
            )
        )
        return format_html(
            '<a href="{}">{}</a><br><span class="awa-utc">{}</span>', url, shown_name(name), fire
        )

    @admin.display(description="args")
    def arguments(self, job: Job) -> SafeString:
        return pretty_json(job.args)

    @admin.display(description="result")
    def outcome(self, job: Job) -> SafeString:
        return pretty_json(job.result)

    @admin.display(description="metadata")
    def meta(self, job: Job) -> SafeString:
        return pretty_json(job.metadata)

    @admin.display(description="errors (every attempt)")
    def attempt_errors(self, job: Job) -> SafeString | str:
        errors = job.errors if isinstance(job.errors, list) else []
        if not errors:
            return "-"
        return format_html_join(
            "",
            '<div class="awa-error"><b>attempt {}</b> {} <code>{}</code><pre>{}</pre></div>',
            (
                (  # raw SQL may store any text: escaped, the traceback's lines kept
                    printable(e.get("attempt", "?")),
                    printable(f"worker {e['worker_id']}") if e.get("worker_id") else "",
                    printable(e.get("exception_class_path", "")),
                    printable_lines(e.get("traceback", "")),
                )
                for e in errors
                if isinstance(e, dict)
            ),
        )

    @admin.action(description="Cancel", permissions=["cancel"])
    def cancel_jobs(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        ids = list(queryset.values_list("id", flat=True))

        def cancel(batch: list[int]) -> str | None:
            done = queues.cancel_jobs(batch, actor(request))
            skipped = len(batch) - len(done)
            if not done:
                return None
            # The admin's history, in one insert however many jobs were cancelled.
            log_changes(request, Job.objects.filter(id__in=done).only("id"), "cancelled")
            return f"cancelled {len(done)} job(s)" + (
                f"; {skipped} running or finished left alone" if skipped else ""
            )

        run_each(
            self, request, [ids], cancel, lambda batch: f"{len(batch)} job(s) (only not-yet-running jobs)"
        )

    @admin.action(description="Retry", permissions=["cancel"])
    def retry_jobs(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        def retry(job: Job) -> str | None:
            return f"job {job.id} is available again" if queues.retry_job(job.id, actor(request)) else None

        run_each(
            self,
            request,
            queryset.order_by("id").only("id"),
            retry,
            lambda job: f"job {job.id} (only failed or cancelled jobs)",
        )
