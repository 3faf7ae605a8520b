"""Runtime instances in the admin (read-only): who runs, who leads, who is stale."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import BooleanField, QuerySet
from django.db.models.expressions import RawSQL
from django.http import HttpRequest

from ..models import RuntimeInstance
from .common import ReadOnlyAdmin, badge, timestamp

# The freshness rule reconciliation uses (reconciliation.FRESH_FOR): a row
# counts for max(30 s, 3 x its snapshot interval).
FRESH_SQL = (
    "awa_runtime_instances.last_seen_at + make_interval(secs => GREATEST(30.0, "
    "awa_runtime_instances.snapshot_interval_ms * 0.003)) > statement_timestamp()"
)


class FreshFilter(admin.SimpleListFilter):
    title = "freshness"
    parameter_name = "fresh"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "fresh"), ("no", "stale")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() in ("yes", "no"):
            return queryset.filter(is_fresh=self.value() == "yes")
        return queryset


@admin.register(RuntimeInstance)
class RuntimeInstanceAdmin(ReadOnlyAdmin):
    list_display = [
        "hostname",
        "pid",
        "role",
        "version",
        "leader_badge",
        "cron_protocol",
        "freshness",
        "last_seen_shown",
        "started_shown",
        "instance_id",
    ]
    list_filter = ["role", "leader", FreshFilter, "shutting_down"]
    ordering = ["-last_seen_at"]
    list_per_page = 100
    fields = [
        ("instance_id", "hostname", "pid"),
        ("role", "version", "cron_protocol"),
        ("leader", "shutting_down", "freshness"),
        ("started_shown", "last_seen_shown", "last_pass_shown"),
        ("snapshot_interval_ms", "queues"),
    ]
    readonly_fields = ["freshness", "started_shown", "last_seen_shown", "last_pass_shown"]

    started_shown = timestamp("started_at", "started at")
    last_seen_shown = timestamp("last_seen_at", "last seen at")
    last_pass_shown = timestamp("last_pass_at", "last pass at")

    def get_queryset(self, request: HttpRequest) -> QuerySet[RuntimeInstance]:
        queryset: QuerySet[RuntimeInstance] = super().get_queryset(request)
        return queryset.annotate(is_fresh=RawSQL(FRESH_SQL, [], output_field=BooleanField()))

    @admin.display(description="leader", ordering="leader")
    def leader_badge(self, row: RuntimeInstance) -> str:
        return badge("leader", "leader") if row.leader else "-"

    @admin.display(description="fresh / stale")
    def freshness(self, row: RuntimeInstance) -> str:
        if row.shutting_down:
            return badge("shutting down", "stale")
        fresh = getattr(row, "is_fresh", False)
        return badge("fresh", "active") if fresh else badge("stale", "stale", "no snapshot recently")
