"""Pieces every page of the operators' console shares.

The admin never edits rows itself: every action calls the service layer
(:mod:`awa_django.operations.schedules`, :mod:`~awa_django.operations.owners`,
:mod:`~awa_django.operations.queues`) with the admin user's username as the actor, and
turns the errors those functions raise into admin messages.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, tzinfo
from typing import Any, cast

import django
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import EmptyResultSet, ValidationError
from django.db import DatabaseError
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from ..db import timestamps
from ..db.jsonb import Undecodable
from ..exceptions import OperationRefused, ScheduleNotFound
from ..store import fleet
from ..terminal import printable

logger = logging.getLogger(__name__)

# What a service function raises for a refused or failed action. Each becomes
# an error message naming the row; anything else is a bug and stays loud.
OPERATOR_ERRORS = (OperationRefused, ScheduleNotFound, ValueError, DatabaseError)


# The most characters of one JSON value a page shows (a value may be up to
# AWA_MAX_ARGS_BYTES, 1 MiB by default, and a page shows several).
SHOWN_JSON_CHARS = 64 * 1024


def pretty_json(value: Any) -> SafeString:
    """A stored JSON value, indented, cut at :data:`SHOWN_JSON_CHARS` with a
    "too large to show" note; a value that was not decoded shows its reason."""
    if isinstance(value, Undecodable):
        note = "too large to show" if "AWA_MAX_ARGS_BYTES" in value.reason else "not shown"
        return format_html('<p class="awa-too-large">{}: {} {}</p>', note, value.column, value.reason)
    text = json.dumps(value, indent=2, sort_keys=True, default=str)
    if len(text) <= SHOWN_JSON_CHARS:
        return format_html('<pre class="awa-json">{}</pre>', text)
    return format_html(
        '<pre class="awa-json">{}</pre><p class="awa-too-large">… too large to show in full: '
        "{} characters as JSON, the first {} shown</p>",
        text[:SHOWN_JSON_CHARS],
        len(text),
        SHOWN_JSON_CHARS,
    )


def shown_name(value: Any, break_after: str = "") -> SafeString:
    """A name (schedule, task, queue, owner) as the console shows it: control,
    bidi and zero-width characters written out (``\\u202e``), as in
    ``manage.py awa``, so no name passes for another; a long one is cut by
    the ``awa-name`` style, whole in its title (on hover). ``break_after="."``
    lets a dotted path break after its dots (where a style allows wrapping)."""
    text = printable(value)
    shown: str | SafeString = text
    if break_after:
        shown = format_html_join(
            mark_safe(break_after + "<wbr>"), "{}", ((p,) for p in text.split(break_after))
        )
    return format_html('<span class="awa-name" title="{}">{}</span>', text, shown)


class EscapedValuesFilter(admin.AllValuesFieldListFilter):
    """``AllValuesFieldListFilter`` showing each value as :func:`shown_name` escapes it."""

    def choices(self, changelist: Any) -> Iterator[Any]:
        for choice in super().choices(changelist):
            yield {**choice, "display": printable(choice["display"])}


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
            # The admin's template capitalises a message's first letter: a
            # message never starts with a name, which would be shown altered.
            model_admin.message_user(request, f"Refused for {label(item)}: {exc}", messages.ERROR)
            continue
        (done if text is not None else unchanged).append(text or label(item))
        if text is not None and isinstance(item, Model):
            model_admin.log_change(request, item, text)
    if done:
        model_admin.message_user(request, "; ".join(done), messages.SUCCESS)
    if unchanged:
        model_admin.message_user(request, "No change: " + ", ".join(unchanged), messages.WARNING)


def log_changes(request: HttpRequest, rows: Iterable[Model], message: str) -> None:
    """A change in the admin history (LogEntry) of each row, in one insert."""
    LogEntry.objects.log_actions(
        # admin_view only lets logged-in staff users in: pk is set.
        user_id=cast(int, request.user.pk),
        queryset=rows,
        action_flag=CHANGE,
        change_message=message,
    )


# The runcron leader whose snapshot is fresh (the freshness reconciliation uses).
Leader = fleet.LiveLeader


def live_leader(using: str = "default") -> Leader | None:
    """The ``runcron`` leader whose snapshot is fresh, if any (one query)."""
    return fleet.live_leader(using)


def badge(text: str, kind: str, title: str = "") -> str:
    """A small coloured label (styles in ``awa_django/admin.css``)."""
    return format_html('<span class="awa-badge awa-{}" title="{}">{}</span>', kind, title, text)


# The one way the console writes a moment: to the second, with its zone.
TIME_FORMAT = "%Y-%m-%d %H:%M:%S %Z"


def utc(value: datetime | None) -> str:
    """``value`` in UTC, as the console writes every moment ("-" for none)."""
    return value.astimezone(UTC).strftime(TIME_FORMAT) if value else "-"


def when(value: datetime | None, zone: tzinfo | None = None) -> SafeString | str:
    """``value`` as every page shows it: in ``zone`` with UTC beside it (under
    it, quieter) when the two read differently, else in UTC alone."""
    if value is None:
        return "-"
    in_utc = utc(value)
    local = value.astimezone(zone).strftime(TIME_FORMAT) if zone is not None else in_utc
    if local == in_utc:
        return in_utc
    return format_html('{}<br><span class="awa-utc">{}</span>', local, in_utc)


def timestamp(column: str, description: str | None = None) -> Callable[[Any, Any], SafeString | str]:
    """An admin column or read-only field showing the datetime ``column`` as :func:`when`
    writes it (Django's own rendering has no seconds and no zone); a value no
    datetime holds, loaded by :func:`~awa_django.db.timestamps.with_safe_timestamps`,
    as "invalid timestamp: <the database's text>"."""

    @admin.display(description=description or column.replace("_", " "), ordering=column)
    def show(model_admin: Any, obj: Any) -> SafeString | str:
        return timestamps.shown(obj, column) or when(getattr(obj, column))

    return show


def text(column: str, description: str | None = None) -> Callable[[Any, Any], str]:
    """An admin column or read-only field showing the stored text (or list of
    texts) ``column`` with control, bidi and separator characters written out
    (:func:`~awa_django.terminal.printable`): Django's own rendering escapes
    HTML only, so an ESC or a U+202E from raw SQL would reach the page."""

    @admin.display(description=description or column.replace("_", " "), ordering=column)
    def show(model_admin: Any, obj: Any) -> str:
        return shown_text(getattr(obj, column))

    return show


def choice_text(column: str, description: str | None = None) -> Callable[[Any, Any], str]:
    """As :func:`text`, for a column with choices: the choice's label, or the
    stored value (escaped) when it is none of them."""

    @admin.display(description=description or column.replace("_", " "), ordering=column)
    def show(model_admin: Any, obj: Any) -> str:
        return shown_text(getattr(obj, f"get_{column}_display")())

    return show


def shown_text(value: Any) -> str:
    """A stored value as :func:`text` shows it: "-" for none, a list joined by commas."""
    if value is None or value == "":
        return "-"
    if isinstance(value, Undecodable):
        return printable(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(printable(item if isinstance(item, str) else json.dumps(item)) for item in value)
    return printable(value if isinstance(value, str) else json.dumps(value))


def seconds(value: float | None) -> str:
    """A duration as every page shows it."""
    if value is None:
        return "-"
    if value < 60:
        return f"{value:.3f} s"
    minutes, rest = divmod(int(value), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{rest:02d}s" if hours else f"{minutes}m{rest:02d}s"


def breadcrumbs_as_list() -> bool:
    """Django 6.1's admin writes breadcrumbs as ``<ol class="breadcrumbs">`` (and styles
    only that); 5.2 and 6.0 as ``<div class="breadcrumbs">``. The console's own pages
    follow the running Django (``admin/awa_django/breadcrumbs.html``)."""
    return django.VERSION >= (6, 1)


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
        "awa_breadcrumbs_list": breadcrumbs_as_list(),
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

    # -- hostile input: a page or a message, never a 500 -------------------------
    # PostgreSQL refuses NUL in text, so a NUL from a URL must not reach a
    # query: psycopg raises DataError (jsonb even aborts the transaction).

    def get_changelist_instance(self, request: HttpRequest) -> ChangeList:
        """Refuse a NUL in any query parameter the way Django refuses an unknown
        lookup: back to the plain list with ``?e=1``."""
        if any("\x00" in key + "".join(values) for key, values in request.GET.lists()):
            raise IncorrectLookupParameters("NUL byte in the query string")
        return super().get_changelist_instance(request)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """The filtered and searched list query, compiled once here (no query).

        Django checks lookup values when it builds the filters, but some fail
        only when the SQL is compiled (``?run_at__year=99999``: no datetime
        holds that year); compiling here turns them into ``?e=1`` as well.
        """
        queryset, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        try:
            queryset.query.get_compiler(queryset.db).as_sql()
        except EmptyResultSet:
            pass  # a valid query that matches nothing
        except (ValueError, OverflowError) as exc:
            raise IncorrectLookupParameters(exc) from exc
        return queryset, may_have_duplicates

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        """No row has a NUL in its key: Django then says the object doesn't exist."""
        if "\x00" in object_id:
            return None
        return super().get_object(request, object_id, from_field)

    def response_action(
        self, request: HttpRequest, queryset: QuerySet[Any], *args: Any, **kwargs: Any
    ) -> HttpResponse | None:
        """Run an action only on a selection of valid primary keys.

        A forged selection (``_selected_action=abc`` for a job, a NUL, an id
        past bigint) is refused as a whole with a message: nothing changes.
        """
        selected = request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)
        invalid = [value for value in selected if not self._valid_pk(value)]
        if invalid:
            shown = ", ".join(repr(value)[:40] for value in invalid[:3])
            self.message_user(
                request,
                f"Not a {self.opts.verbose_name} id: {shown}. No items have been changed.",
                messages.ERROR,
            )
            return HttpResponseRedirect(request.get_full_path())
        return super().response_action(request, queryset, *args, **kwargs)

    def _valid_pk(self, value: str) -> bool:
        field = self.opts.pk
        if "\x00" in value:
            return False
        try:
            field.run_validators(field.to_python(value))  # bigint range for job ids
        except ValidationError:
            return False
        return True
