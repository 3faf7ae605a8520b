"""Owners in the admin: the live reconciliation plan, retire/restore an owner,
and the adopt/transfer form (which names the owner the operator expects)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ..declarations.runtime import RUNTIME_OWNER
from ..models import CronJob, CronOwner
from ..operations import owners
from ..operations.common import ActionResult
from ..reconciliation import persistence
from ..store import fleet
from ..terminal import printable
from ..validation import validate_label
from .common import (
    OPERATOR_ERRORS,
    ReadOnlyAdmin,
    actor,
    badge,
    breadcrumbs_as_list,
    confirmation,
    has_awa_perm,
    log_changes,
    shown_name,
    text,
    timestamp,
    utc,
)


def schedules(names: list[str]) -> QuerySet[CronJob]:
    return CronJob.objects.filter(name__in=names).order_by("name")


def plan_for(owner_id: str, using: str = "default") -> persistence.Plan | str:
    """The live plan of ``owner_id``, or the error text when it cannot be computed."""
    try:
        return persistence.plan(owner_id, using=using)
    except OPERATOR_ERRORS as exc:
        return str(exc)


class OwnerChangeList(ChangeList):
    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        self.result_list = list(self.result_list)
        ids = [o.owner_id for o in self.result_list]
        counts = fleet.schedule_counts_by_owner(ids, self.queryset.db)
        for owner in self.result_list:
            # A plan is a handful of queries; the page size bounds how many.
            owner._awa_plan = plan_for(owner.owner_id, self.queryset.db)
            owner._awa_count = counts.get(owner.owner_id, 0)


def plan_status(plan: persistence.Plan | str) -> SafeString | str:
    if isinstance(plan, str):
        return badge("error", "overdue", plan)
    if not plan.blockers:
        return badge("converged", "active")
    return format_html_join(" ", "{}", ((badge(b, "paused"),) for b in plan.blockers))


def plan_text(plan: persistence.Plan) -> dict[str, str]:
    """The plan's names and hashes as the owner page shows them: escaped, joined."""
    return {
        "desired_hash": printable(plan.desired_hash or "-"),
        **{
            key: printable(", ".join(getattr(plan, key))) or "-"
            for key in ("retirements", "additions", "updates", "blocking_instances")
        },
        "conflicts": printable("; ".join(plan.conflicts)) or "-",
    }


def shown_declaration(declaration: dict[str, Any]) -> dict[str, Any]:
    """A live declaration with its runtime, revision and hash escaped (raw SQL may write any text)."""
    return {
        **declaration,
        **{key: printable(declaration.get(key, "")) for key in ("instance_id", "revision", "desired_hash")},
    }


def _plan_of(owner: CronOwner) -> persistence.Plan | str:
    """The plan :class:`OwnerChangeList` attached to a listed owner."""
    plan: persistence.Plan | str = vars(owner)["_awa_plan"]
    return plan


class AdoptForm(forms.Form):
    name = forms.CharField(label="Schedule", max_length=200)
    expected_owner = forms.CharField(
        label="Expected current owner",
        required=False,
        max_length=200,
        help_text="The owner the schedule has now; leave blank for an unowned schedule. "
        "The action is refused if it has another owner.",
    )
    owner = forms.CharField(label="New owner", max_length=200)


@admin.register(CronOwner)
class CronOwnerAdmin(ReadOnlyAdmin):
    list_display = ["owner_name", "status", "grace_left", "would_retire", "declarations", "schedules"]
    search_fields = ["owner_id"]
    list_per_page = 20
    change_form_template = "admin/awa_django/cronowner/change_form.html"
    change_list_template = "admin/awa_django/cronowner/change_list.html"
    fields = [
        "owner_name",
        "synced_hash_shown",
        "agreed_hash_shown",
        "agreed_since_shown",
        "evidence_until_shown",
    ]
    readonly_fields = [
        "owner_name",
        "synced_hash_shown",
        "agreed_hash_shown",
        "agreed_since_shown",
        "evidence_until_shown",
    ]

    agreed_since_shown = timestamp("agreed_since", "agreed since")
    evidence_until_shown = timestamp("evidence_until", "evidence until")
    # Any text raw SQL stored: shown escaped.
    synced_hash_shown = text("synced_hash", "synced hash")
    agreed_hash_shown = text("agreed_hash", "agreed hash")

    @admin.display(description="owner id", ordering="owner_id")
    def owner_name(self, owner: CronOwner) -> SafeString:
        return shown_name(owner.owner_id)

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return OwnerChangeList

    @admin.display(description="plan")
    def status(self, owner: CronOwner) -> SafeString | str:
        if owner.owner_id == RUNTIME_OWNER:
            return badge("runtime schedules: never reconciled", "active")
        return plan_status(_plan_of(owner))

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        runtime = persistence.runtime_schedule_names()
        context = {
            "awa_runtime_count": len(runtime),
            "awa_runtime_owner": RUNTIME_OWNER,
            "awa_runtime_url": reverse("admin:awa_django_cronjob_changelist")
            + "?"
            + urlencode({"owner_id__exact": RUNTIME_OWNER}),
            **(extra_context or {}),
        }
        return super().changelist_view(request, context)

    @admin.display(description="grace left")
    def grace_left(self, owner: CronOwner) -> str:
        plan = _plan_of(owner)
        if isinstance(plan, str) or plan.grace_remaining_ms is None:
            return "-"
        return f"{plan.grace_remaining_ms / 1000:.0f} s"

    @admin.display(description="would retire")
    def would_retire(self, owner: CronOwner) -> str:
        plan = _plan_of(owner)
        return "-" if isinstance(plan, str) else printable(", ".join(plan.retirements)) or "-"

    @admin.display(description="live declarations")
    def declarations(self, owner: CronOwner) -> str:
        plan = _plan_of(owner)
        return "-" if isinstance(plan, str) else str(len(plan.declarations))

    @admin.display(description="schedules")
    def schedules(self, owner: CronOwner) -> SafeString:
        url = (
            reverse("admin:awa_django_cronjob_changelist")
            + "?"
            + urlencode({"owner_id__exact": owner.owner_id})
        )
        return format_html('<a href="{}">{}</a>', url, vars(owner)["_awa_count"])

    # -- pages -----------------------------------------------------------------
    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        return [
            path("adopt/", view(self.adopt_view), name="awa_django_cronowner_adopt"),
            path(
                "<path:object_id>/retire/",
                view(self.owner_action_view),
                {"action": "retire_owner"},
                name="awa_django_cronowner_retire",
            ),
            path(
                "<path:object_id>/restore/",
                view(self.owner_action_view),
                {"action": "restore_owner"},
                name="awa_django_cronowner_restore",
            ),
            *super().get_urls(),
        ]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = dict(extra_context or {})
        owner = self.get_object(request, unquote(object_id))  # as Django's own change view does
        if owner is not None:
            plan = plan_for(owner.owner_id)
            may = has_awa_perm(request, "retire_cronjob")
            context.update(
                awa_plan=plan,
                awa_agreed_since=utc(plan.agreed_since) if not isinstance(plan, str) else "-",
                awa_declarations=[]
                if isinstance(plan, str)
                else [(shown_declaration(d), utc(d.get("expires_at"))) for d in plan.declarations],
                awa_plan_text={} if isinstance(plan, str) else plan_text(plan),
                awa_status=plan_status(plan),
                awa_retire_url=reverse("admin:awa_django_cronowner_retire", args=[quote(owner.owner_id)])
                if may
                else None,
                awa_restore_url=reverse("admin:awa_django_cronowner_restore", args=[quote(owner.owner_id)])
                if may
                else None,
                awa_adopt_url=reverse("admin:awa_django_cronowner_adopt")
                + "?"
                + urlencode({"owner": owner.owner_id})
                if may
                else None,
                awa_schedules_url=reverse("admin:awa_django_cronjob_changelist")
                + "?"
                + urlencode({"owner_id__exact": owner.owner_id}),
            )
        return super().change_view(request, object_id, form_url, context)

    def _require_retire(self, request: HttpRequest) -> None:
        if not has_awa_perm(request, "retire_cronjob"):
            raise PermissionDenied

    def owner_action_view(self, request: HttpRequest, object_id: str, action: str) -> HttpResponse:
        """Retire or restore every schedule of an owner: dry-run plan, then confirm."""
        self._require_retire(request)
        owner_id = unquote(object_id)
        try:
            validate_label(owner_id, "owner")  # a NUL must not reach a query
        except ValueError:
            raise Http404("not an owner id") from None
        owner = self.get_object(request, owner_id)
        if owner is None:
            raise Http404(f"no owner {owner_id!r}")
        back = reverse("admin:awa_django_cronowner_change", args=[quote(owner_id)])
        verb = "retire" if action == "retire_owner" else "restore"
        apply = request.method == "POST" and request.POST.get("post") == "yes"
        try:
            verb_function = owners.retire_owner if action == "retire_owner" else owners.restore_owner
            result = verb_function(owner_id, actor=actor(request), apply=apply)
        except OPERATOR_ERRORS as exc:
            self.message_user(request, f"{verb} owner {owner_id}: {exc}", messages.ERROR)
            return HttpResponseRedirect(back)
        if apply:
            if result.schedules:
                log_changes(request, [owner], f"{verb}d owner {owner_id}: " + ", ".join(result.schedules))
                log_changes(request, schedules(result.schedules), f"{verb}d with owner {owner_id}")
            self.message_user(
                request,
                f"{verb}d {len(result.schedules)} schedule(s) of {owner_id}: "
                + (", ".join(result.schedules) or "nothing"),
                messages.SUCCESS,
            )
            return HttpResponseRedirect(back)
        if not result.schedules:
            self.message_user(
                request, f"Nothing to {verb}: owner {owner_id} has no such schedule.", messages.WARNING
            )
            return HttpResponseRedirect(back)
        return confirmation(
            request,
            self,
            title=f"{verb.capitalize()} every schedule of owner {owner_id}?",
            action_label=f"{verb.capitalize()} owner",
            explanation=(
                f"These {len(result.schedules)} schedule(s) of {owner_id} will be {verb}d. "
                "Works without any live declaration of the owner."
            ),
            changes=result.schedules,
            unchanged=[],
            hidden=[("post", "yes")],
            form_url=request.path,
            cancel_url=back,
        )

    def adopt_view(self, request: HttpRequest) -> HttpResponse:
        """Adopt or transfer one schedule: form, dry-run plan, confirm."""
        self._require_retire(request)
        form = AdoptForm(request.POST if request.method == "POST" else None, initial=request.GET.dict())
        plan: ActionResult | None = None
        if form.is_valid():
            data = form.cleaned_data
            apply = request.POST.get("post") == "yes"
            try:
                plan = owners.adopt(
                    data["name"],
                    data["owner"],
                    actor=actor(request),
                    apply=apply,
                    expected_owner=data["expected_owner"] or None,
                )
            except OPERATOR_ERRORS as exc:
                self.message_user(request, f"adopt {data['name']}: {exc}", messages.ERROR)
                plan = None
            else:
                if apply:
                    was = data["expected_owner"] or "unowned"
                    log_changes(
                        request, schedules(plan.schedules), f"adopted by owner {data['owner']} (was {was})"
                    )
                    log_changes(
                        request,
                        CronOwner.objects.filter(owner_id=data["owner"]),
                        f"adopted {', '.join(plan.schedules)} (was {was})",
                    )
                    self.message_user(
                        request,
                        f"Adopted {data['name']}: it now belongs to {data['owner']}",
                        messages.SUCCESS,
                    )
                    return HttpResponseRedirect(
                        reverse("admin:awa_django_cronjob_change", args=[quote(data["name"])])
                    )
            if plan is not None and not plan.schedules:
                self.message_user(
                    request,
                    f"No change: {data['name']} already belongs to {data['owner']}",
                    messages.WARNING,
                )
        context = {
            **self.admin_site.each_context(request),
            "title": "Adopt or transfer a schedule",
            "opts": self.model._meta,
            "form": form,
            "plan": plan,
            # The dry run's names. Not the result itself: an ActionResult is
            # false unless it changed something, and a dry run changes nothing.
            "awa_preview": plan.schedules if plan is not None else [],
            "awa_breadcrumbs_list": breadcrumbs_as_list(),
        }
        return TemplateResponse(request, "admin/awa_django/cronowner/adopt.html", context)
