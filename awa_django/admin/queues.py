"""Queues in the admin: depth by state, paused or not, limits; pause and resume."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..client.limits import limit_label
from ..models import Queue
from ..operations import queues
from ..terminal import printable
from .common import ReadOnlyAdmin, actor, badge, has_awa_perm, run_each, shown_name, text, timestamp, utc


@admin.register(Queue)
class QueueAdmin(ReadOnlyAdmin):
    list_display = [
        "queue_name",
        "status",
        "limits",
        "available",
        "scheduled",
        "running",
        "retryable",
        "failed",
        "completed",
        "cancelled",
        "links",
    ]
    list_per_page = 100
    actions = ["pause_queues", "resume_queues"]
    fields = [
        "queue_name",
        "status",
        "paused_at_shown",
        "paused_by_shown",
        "limits",
        "available",
        "scheduled",
        "running",
        "retryable",
        "completed",
        "failed",
        "cancelled",
        "links",
    ]
    readonly_fields = ["queue_name", "status", "limits", "links", "paused_at_shown", "paused_by_shown"]

    paused_at_shown = timestamp("paused_at", "paused at")
    paused_by_shown = text("paused_by", "paused by")

    @admin.display(description="queue", ordering="queue")
    def queue_name(self, row: Queue) -> SafeString:
        return shown_name(row.queue)

    def has_pause_permission(self, request: HttpRequest) -> bool:
        return has_awa_perm(request, "pause_queue")

    @admin.display(description="status")
    def status(self, row: Queue) -> str:
        if row.paused_at is None:
            return badge("active", "active")
        return badge(
            printable(f"paused by {row.paused_by}"),
            "paused",
            f"since {utc(row.paused_at)}; workers claim nothing, enqueue continues",
        )

    @admin.display(description="limits")
    def limits(self, row: Queue) -> str:
        """The queue's QUEUE_LIMITS (rate per period, running at once), enforced fleet-wide at claim."""
        return limit_label(queues.queue_limits(row._state.db or "default").get(row.queue)) or "-"

    @admin.display(description="")
    def links(self, row: Queue) -> SafeString:
        jobs = reverse("admin:awa_django_job_changelist") + "?" + urlencode({"queue": row.queue})
        schedules = (
            reverse("admin:awa_django_cronjob_changelist") + "?" + urlencode({"queue__exact": row.queue})
        )
        return format_html('<a href="{}">jobs</a> · <a href="{}">schedules</a>', jobs, schedules)

    @admin.action(description="Pause", permissions=["pause"])
    def pause_queues(self, request: HttpRequest, queryset: QuerySet[Queue]) -> None:
        def pause(row: Queue) -> str | None:
            return f"paused queue {row.queue}" if queues.pause_queue(row.queue, actor(request)) else None

        run_each(self, request, queryset.order_by("queue"), pause, str)

    @admin.action(description="Resume", permissions=["pause"])
    def resume_queues(self, request: HttpRequest, queryset: QuerySet[Queue]) -> None:
        def resume(row: Queue) -> str | None:
            return f"resumed queue {row.queue}" if queues.resume_queue(row.queue, actor(request)) else None

        run_each(self, request, queryset.order_by("queue"), resume, str)
