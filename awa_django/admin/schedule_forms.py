"""Runtime schedules in the admin: the add/change form and the admin behaviour around it.

Users with ``awa_django.add_cronjob`` / ``change_cronjob`` / ``delete_cronjob``
create, edit and delete runtime schedules (owner ``awa:runtime``); the form
validates exactly as a declaration (the service layer's
:func:`~awa_django.declarations.runtime.build_runtime_schedule`) and every write
goes through :mod:`awa_django.operations.runtime_schedules`. "Preview" shows the
schedule in words and its next fires without saving. Code-declared schedules
stay read-only. Django's admin history records each change with the user.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

from django import forms
from django.apps import apps
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.module_loading import module_has_submodule

from ..client.compat import Task
from ..cron.describe import describe_schedule
from ..db.sessions import database_now
from ..declarations.declaration import registry
from ..declarations.runtime import RUNTIME_OWNER, build_runtime_schedule
from ..declarations.shape import Schedule
from ..exceptions import InvalidSchedule, OperationRefused, ScheduleNotFound
from ..models import CronJob
from ..operations.runtime_schedules import (
    code_declaration,
    create_schedule,
    delete_schedule,
    lookalike_name,
    schedule_exists,
    update_schedule,
)
from .common import actor, has_awa_perm
from .fires import dst_marked_fires

__all__ = [
    "FORM_OPTIONS",
    "OPTIONS_NOT_IN_FORM",
    "RUNTIME_FIELDS",
    "RuntimeScheduleAdminMixin",
    "RuntimeScheduleForm",
    "registered_tasks",
]

# The form's editable fields, in order (``name`` too when adding), and the
# schedule option (schedules.shape.OPTIONS) each one edits.
FORM_OPTIONS = {
    "cron_expr": "cron",
    "every_seconds": "every",
    "anchor": "anchor",
    "timezone": "timezone",
    "missed_fire_policy": "missed_fire_policy",
    "overlap": "overlap",
    "starting_deadline": "starting_deadline",
    "jitter": "jitter",
    "task_path": "task",
    "call_args": "args",
    "call_kwargs": "kwargs",
    "queue": "queue",
    "priority": "priority",
    "max_attempts": "max_attempts",
}
RUNTIME_FIELDS = list(FORM_OPTIONS)
# The options the form does not show: a new schedule takes their defaults and
# an edit keeps their stored values (update_schedule changes what it is given).
# A test holds FORM_OPTIONS and this together to shape.OPTIONS.
OPTIONS_NOT_IN_FORM = frozenset({"tags", "metadata", "unique_key", "concurrency_key", "concurrency_limit"})
# InvalidSchedule.field -> the form field that shows the error.
_FIELD_OF = {option: form_field for form_field, option in FORM_OPTIONS.items()}
PREVIEW_FIRES = 5


def registered_tasks() -> list[str]:
    """Dotted paths of the tasks this deployment knows: every installed app's
    ``tasks`` module, and the tasks of declared schedules."""
    found = {s.kind for s in registry}
    for config in apps.get_app_configs():
        if not module_has_submodule(config.module, "tasks"):
            continue
        try:
            module = importlib.import_module(f"{config.name}.tasks")
        except Exception:  # a broken tasks module must not break the admin page
            continue
        found.update(v.module_path for v in vars(module).values() if isinstance(v, Task))
    return sorted(found)


def _json_field(label: str, default: str, help_text: str) -> forms.CharField:
    return forms.CharField(
        label=label,
        initial=default,
        required=False,
        help_text=help_text,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
    )


class RuntimeScheduleForm(forms.ModelForm):  # type: ignore[type-arg]
    """A runtime schedule's definition; ``preview`` holds its description and next fires."""

    task_path = forms.ChoiceField(label="task", help_text="A django.tasks task of this deployment.")
    call_args = _json_field("args", "[]", "A JSON list of positional arguments.")
    call_kwargs = _json_field("kwargs", "{}", "A JSON object of keyword arguments.")

    class Meta:
        model = CronJob
        fields = ["name", *(f for f in RUNTIME_FIELDS if f not in ("task_path", "call_args", "call_kwargs"))]
        labels = {"cron_expr": "cron expression", "every_seconds": "every (seconds)"}
        help_texts = {
            "cron_expr": "5 fields, 6 with seconds first, or @hourly, @daily, ... (or leave empty and "
            "give every)",
            "every_seconds": "An interval schedule instead of cron: whole seconds between slots.",
            "anchor": "With every: the instant slots count from (empty: the creation, to the second).",
            "timezone": "An IANA zone name such as Europe/Berlin.",
            "starting_deadline": "Seconds: a slot reached later than this after its time is skipped. "
            "Empty: no deadline.",
            "jitter": "Seconds: each job runs at its slot plus a stable offset below this.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.preview: dict[str, Any] | None = None
        self.options: dict[str, Any] = {}
        current = self.instance.kind if self.instance.pk else ""
        choices = registered_tasks()
        if current and current not in choices:
            choices.append(current)
        task_field = self.fields["task_path"]
        assert isinstance(task_field, forms.ChoiceField)
        task_field.choices = [("", "---------")] + [(c, c) for c in choices]
        if self.instance.pk:
            stored = self.instance.args if isinstance(self.instance.args, dict) else {}
            self.initial.update(
                task_path=current,
                call_args=json.dumps(stored.get("args", [])),
                call_kwargs=json.dumps(stored.get("kwargs", {})),
            )
        for name in ("queue", "priority", "max_attempts", "overlap", "starting_deadline", "jitter"):
            if name in self.fields:
                self.fields[name].required = False

    def _post_clean(self) -> None:
        # The model's own validation is replaced by the declaration's (clean()).
        pass

    def _decoded(self, field: str) -> Any:
        text = self.cleaned_data.get(field) or ""
        try:
            return json.loads(text) if text.strip() else None
        except ValueError as exc:
            self.add_error(field, f"is not JSON: {exc}")
            return None
        except RecursionError:
            self.add_error(field, "is nested too deeply to read")
            return None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        name = self.instance.pk or data.get("name")
        options: dict[str, Any] = {
            "cron": data.get("cron_expr") or None,
            "every": data.get("every_seconds"),
            "anchor": data.get("anchor"),
            "task": data.get("task_path") or None,
            "timezone": data.get("timezone") or "UTC",
            "missed_fire_policy": data.get("missed_fire_policy") or "coalesce",
            "overlap": data.get("overlap") or "allow",
            "starting_deadline": data.get("starting_deadline"),
            "jitter": data.get("jitter") or 0,
            "args": self._decoded("call_args") or [],
            "kwargs": self._decoded("call_kwargs") or {},
        }
        for key in ("queue", "priority", "max_attempts"):
            if data.get(key) not in (None, ""):
                options[key] = data[key]
        if self.errors:
            return data
        if not self.instance.pk and isinstance(name, str) and name:
            reason = code_declaration(name)
            if reason:
                self.add_error("name", f"{reason}; it is read-only here.")
                return data
            if schedule_exists(name):
                self.add_error("name", "a runtime schedule has this name: edit it instead.")
                return data
            twin = lookalike_name(name)
            if twin is not None:
                self.add_error(
                    "name", f"differs from {twin!r} only in case or Unicode form; choose distinct names."
                )
                return data
        try:
            schedule = build_runtime_schedule(name, options)
        except InvalidSchedule as exc:
            field = _FIELD_OF.get(exc.field, exc.field)
            self.add_error(field if field in self.fields else None, exc.reason)
            return data
        self.options = options
        self.preview = _preview(schedule)
        return data

    def is_valid(self) -> bool:
        # "Preview" validates and shows, never saves.
        return super().is_valid() and "_preview" not in self.data


_REFUSED = "_awa_refused"
_PENDING_DELETIONS = "_awa_pending_deletions"


def _refuse(request: HttpRequest, exc: Exception) -> None:
    messages.error(request, str(exc))
    setattr(request, _REFUSED, True)


def _refused(request: HttpRequest) -> bool:
    return bool(getattr(request, _REFUSED, False))


def _preview(schedule: Schedule) -> dict[str, Any]:
    now = database_now()
    row = CronJob(
        name="preview",
        cron_expr=None if schedule.cron is None else schedule.cron.text,
        every_seconds=schedule.every,
        anchor=schedule.anchor,
        timezone=schedule.timezone,
        created_at=now,
    )
    return {
        "description": describe_schedule(row.cron_expr, row.every_seconds),
        "timezone": schedule.timezone,
        "fires": dst_marked_fires(row, now, PREVIEW_FIRES),
    }


class RuntimeScheduleAdminMixin:
    """Add, change and delete for runtime rows; everything else stays read-only.

    Mixed in before :class:`~awa_django.admin.common.ReadOnlyAdmin`, whose
    read-only answers it keeps for code-declared rows.
    """

    form: Any = RuntimeScheduleForm

    @staticmethod
    def is_runtime(obj: Any) -> bool:
        return obj is not None and obj.owner_id == RUNTIME_OWNER and not obj.is_retired

    def has_add_permission(self, request: HttpRequest) -> bool:
        return has_awa_perm(request, "add_cronjob")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.is_runtime(obj) and has_awa_perm(request, "change_cronjob")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # False without a row: no "delete selected" action bypassing the service layer.
        return self.is_runtime(obj) and has_awa_perm(request, "delete_cronjob")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return [("New runtime schedule (owner awa:runtime)", {"fields": ["name", *RUNTIME_FIELDS]})]
        fieldsets = super().get_fieldsets(request, obj)  # type: ignore[misc]
        if self.has_change_permission(request, obj):
            definition = (
                "Runtime schedule (owner awa:runtime)",
                {"fields": [("schedule_name", "owner", "declared_in"), *RUNTIME_FIELDS]},
            )
            return [definition, *fieldsets[1:]]
        return fieldsets

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        readonly = list(super().get_readonly_fields(request, obj))  # type: ignore[misc]
        if obj is not None and self.has_change_permission(request, obj):
            fieldsets = super().get_fieldsets(request, obj)  # type: ignore[misc]
            for _title, options in fieldsets[1:]:
                for line in options["fields"]:
                    readonly.extend(line if isinstance(line, (list, tuple)) else [line])
        return readonly

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is not None and not self.has_change_permission(request, obj):
            kwargs["form"] = forms.ModelForm
        return super().get_form(request, obj, change, **kwargs)  # type: ignore[misc]

    # A refused write (a peer changed the row since the form was validated)
    # is shown as the error it is: no success message and no history entry.

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        options = dict(form.options)
        try:
            if change:
                update_schedule(obj.pk, actor=actor(request), **options)
            else:
                name = form.cleaned_data["name"]
                create_schedule(name, task=options.pop("task"), actor=actor(request), **options)
                obj.pk = name
        except (InvalidSchedule, OperationRefused, ScheduleNotFound) as exc:
            _refuse(request, exc)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        try:
            delete_schedule(obj.pk, actor=actor(request))
        except (OperationRefused, ScheduleNotFound) as exc:
            _refuse(request, exc)
            return
        super().log_deletions(request, getattr(request, _PENDING_DELETIONS, [obj]))  # type: ignore[misc]

    def log_addition(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        return None if _refused(request) else super().log_addition(request, obj, message)  # type: ignore[misc]

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        return None if _refused(request) else super().log_change(request, obj, message)  # type: ignore[misc]

    def log_deletions(self, request: HttpRequest, queryset: Any) -> Any:
        # Django logs a deletion before it deletes: held until the delete succeeds.
        setattr(request, _PENDING_DELETIONS, list(queryset))
        return []

    def response_add(self, request: HttpRequest, obj: Any, post_url_continue: Any = None) -> HttpResponse:
        if _refused(request):
            return HttpResponseRedirect(request.get_full_path())
        return super().response_add(request, obj, post_url_continue)  # type: ignore[misc,no-any-return]

    def response_change(self, request: HttpRequest, obj: Any) -> HttpResponse:
        if _refused(request):
            return HttpResponseRedirect(request.get_full_path())
        return super().response_change(request, obj)  # type: ignore[misc,no-any-return]

    def response_delete(self, request: HttpRequest, obj_display: str, obj_id: Any) -> HttpResponse:
        if _refused(request):
            site = getattr(self, "admin_site", None)
            name = f"{getattr(site, 'name', 'admin')}:awa_django_cronjob_change"
            return HttpResponseRedirect(reverse(name, args=[obj_id]))
        return super().response_delete(request, obj_display, obj_id)  # type: ignore[misc,no-any-return]

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], *args: Any, **kwargs: Any
    ) -> Any:
        adminform = context.get("adminform")
        form = adminform.form if adminform is not None else None
        context["awa_preview"] = getattr(form, "preview", None)
        context["awa_runtime_form"] = isinstance(form, RuntimeScheduleForm)
        return super().render_change_form(request, context, *args, **kwargs)  # type: ignore[misc]
