"""Pieces every page of the operators' console shares.

The admin never edits rows itself: every action calls the service layer
(:mod:`awa_django.operations`, :mod:`~awa_django.ownership`,
:mod:`~awa_django.queues`) with the admin user's username as the actor, and
turns the errors those functions raise into admin messages.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib import admin, messages
from django.db import DatabaseError, connections
from django.db.models import Model
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.html import format_html

from ..evidence import FRESH_FOR
from ..exceptions import OperationRefused, ScheduleNotFound

logger = logging.getLogger(__name__)

# What a service function raises for a refused or failed action. Each becomes
# an error message naming the row; anything else is a bug and stays loud.
OPERATOR_ERRORS = (OperationRefused, ScheduleNotFound, ValueError, DatabaseError)


def actor(request: HttpRequest) -> str:
    """The operator recorded in ``paused_by``/``retired_by``/``triggered_by``."""
    return str(request.user.get_username())


def has_awa_perm(request: HttpRequest, codename: str) -> bool:
    return bool(request.user.has_perm(f"awa_django.{codename}"))


def run_each[T](
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    items: Iterable[T],
    action: Callable[[T], str | None],
    label: Callable[[T], str],
) -> None:
    """Call ``action`` for each item; one message per outcome, never a 500.

    ``action`` returns a success text, or None when nothing changed. A change
    to a model instance is also written to the admin's history (LogEntry),
    next to the ``*_by`` columns and the ``awa_django`` log events.
    """
    done: list[str] = []
    unchanged: list[str] = []
    for item in items:
        try:
            text = action(item)
        except OPERATOR_ERRORS as exc:
            logger.info("admin action refused: %s", exc, extra={"event": "admin.action_refused"})
            model_admin.message_user(request, f"{label(item)}: {exc}", messages.ERROR)
            continue
        (done if text is not None else unchanged).append(text or label(item))
        if text is not None and isinstance(item, Model):
            model_admin.log_change(request, item, text)
    if done:
        model_admin.message_user(request, "; ".join(done), messages.SUCCESS)
    if unchanged:
        model_admin.message_user(request, "No change: " + ", ".join(unchanged), messages.WARNING)


LIVE_LEADER_SQL = f"""
    SELECT r.hostname, r.pid, r.last_seen_at
      FROM awa_runtime_instances AS r
     WHERE r.leader AND NOT r.shutting_down
       AND r.last_seen_at + {FRESH_FOR} > statement_timestamp()
     ORDER BY r.last_seen_at DESC
     LIMIT 1
"""


@dataclass(frozen=True)
class Leader:
    hostname: str
    pid: int
    last_seen_at: datetime

    def __str__(self) -> str:
        return f"{self.hostname}:{self.pid}"


def live_leader(using: str = "default") -> Leader | None:
    """The ``runcron`` leader whose snapshot is fresh, if any (one query)."""
    with connections[using].cursor() as cursor:
        cursor.execute(LIVE_LEADER_SQL)
        row = cursor.fetchone()
    return Leader(*row) if row else None


def badge(text: str, kind: str, title: str = "") -> str:
    """A small coloured label (styles in ``awa_django/admin.css``)."""
    return format_html('<span class="awa-badge awa-{}" title="{}">{}</span>', kind, title, text)


def utc(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value else "-"


def confirmation(
    request: HttpRequest,
    model_admin: admin.ModelAdmin[Any],
    *,
    title: str,
    action_label: str,
    explanation: str,
    changes: list[str],
    unchanged: list[str],
    hidden: list[tuple[str, str]],
    form_url: str,
    cancel_url: str,
) -> TemplateResponse:
    """The page listing exactly what an action will change; nothing changes until confirmed."""
    opts = model_admin.model._meta
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "opts": opts,
        "action_label": action_label,
        "explanation": explanation,
        "changes": changes,
        "unchanged": unchanged,
        "hidden": hidden,
        "form_url": form_url,
        "cancel_url": cancel_url,
    }
    return TemplateResponse(request, "admin/awa_django/confirm_action.html", context)


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """The base of every awa_django admin: rows are never added, edited or deleted.

    Schedule definitions come from code and lifecycle changes are actions that
    go through the service layer; retired and owned schedule rows must never be
    deleted (the fence refuses it); jobs are pruned by retention, runtimes clean
    up their own stale rows, and queues and owners change only through actions.
    """

    class Media:
        css = {"all": ["awa_django/admin.css"]}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
