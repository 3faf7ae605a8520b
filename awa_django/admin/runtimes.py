"""Runtime instances in the admin (read-only): who runs, who leads, who is stale."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import (
    DateTimeField,
    DurationField,
    ExpressionWrapper,
    F,
    FloatField,
    Func,
    QuerySet,
    Value,
)
from django.db.models.functions import Greatest
from django.db.models.lookups import GreaterThan
from django.http import HttpRequest

from ..models import RuntimeInstance
from .common import EscapedValuesFilter, ReadOnlyAdmin, badge, text, timestamp, utc


def is_fresh() -> GreaterThan:
    """The freshness rule reconciliation uses (reconciliation.FRESH_FOR), as an
    expression: a row counts for max(30 s, 3 x its snapshot interval), by
    ``statement_timestamp()``."""
    seconds = Greatest(
        Value(30.0),
        ExpressionWrapper(F("snapshot_interval_ms") * Value(0.003), output_field=FloatField()),
        output_field=FloatField(),
    )
    counts_for = Func(
        seconds,
        function="make_interval",
        template="%(function)s(secs => %(expressions)s)",
        output_field=DurationField(),
    )
    until = ExpressionWrapper(F("last_seen_at") + counts_for, output_field=DateTimeField())
    return GreaterThan(until, Func(function="statement_timestamp", output_field=DateTimeField()))


class StoppedFilter(admin.SimpleListFilter):
    """Running processes apart from those whose last snapshot recorded a clean stop."""

    title = "state"
    parameter_name = "stopped"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("no", "running"), ("yes", "stopped")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() in ("yes", "no"):
            return queryset.filter(shutting_down=self.value() == "yes")
        return queryset


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
        "hostname_shown",
        "pid",
        "role_shown",
        "version_shown",
        "leader_badge",
        "cron_protocol",
        "freshness",
        "last_seen_shown",
        "started_shown",
        "instance_id",
    ]
    list_filter = [("role", EscapedValuesFilter), "leader", FreshFilter, StoppedFilter]
    ordering = ["-last_seen_at"]
    list_per_page = 100
    # "shutting_down" is shown as "stopped" by ``freshness``: the raw flag would
    # read "shutting down" for a process that has exited.
    fields = [
        ("instance_id", "hostname_shown", "pid"),
        ("role_shown", "version_shown", "cron_protocol"),
        ("leader", "freshness"),
        ("started_shown", "last_seen_shown", "last_pass_shown"),
        ("snapshot_interval_ms", "queues_shown"),
    ]
    readonly_fields = [
        "freshness",
        "started_shown",
        "last_seen_shown",
        "last_pass_shown",
        "hostname_shown",
        "role_shown",
        "version_shown",
        "queues_shown",
    ]

    # Written by every runtime, and by raw SQL: shown escaped.
    hostname_shown = text("hostname")
    role_shown = text("role")
    version_shown = text("version")
    queues_shown = text("queues")

    started_shown = timestamp("started_at", "started at")
    last_seen_shown = timestamp("last_seen_at", "last seen at")
    last_pass_shown = timestamp("last_pass_at", "last pass at")

    def get_queryset(self, request: HttpRequest) -> QuerySet[RuntimeInstance]:
        queryset: QuerySet[RuntimeInstance] = super().get_queryset(request)
        return queryset.annotate(is_fresh=is_fresh())

    @admin.display(description="leader", ordering="leader")
    def leader_badge(self, row: RuntimeInstance) -> str:
        return badge("leader", "leader") if row.leader else "-"

    @admin.display(description="fresh / stale / stopped")
    def freshness(self, row: RuntimeInstance) -> str:
        if row.shutting_down:
            # The last snapshot of a clean stop: the process has exited, it is
            # not still stopping (the row stays until cleanup, up to a day).
            return badge("stopped", "retired", f"stopped cleanly; last snapshot {utc(row.last_seen_at)}")
        fresh = getattr(row, "is_fresh", False)
        return badge("fresh", "active") if fresh else badge("stale", "stale", "no snapshot recently")
