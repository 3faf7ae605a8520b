"""Schedule rows compared with this deployment's declarations.

Two mismatches an operator must see, computed here once for ``awa cron list``,
the admin and ``awa health``:

* **no longer declared**: a live (not retired) row of this deployment's owner
  (``AWA_OWNER``, or no owner for an additive deployment) that no declaration
  of this code names. Sync only adds and updates, so such a schedule keeps
  firing until ``awa cron remove NAME``. An additive deployment cannot tell
  its own rows from another additive deployment's on a shared database:
  there, the other's schedules are flagged too (give each an ``AWA_OWNER``).
* **declared here, owned elsewhere**: this code declares the schedule, but an
  authoritative deployment owns the row (adopted), so the declaration is
  ignored: remove the declaration from this code.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q, QuerySet

from ..conf import conf
from ..declarations.declaration import declared_schedules
from ..declarations.runtime import RUNTIME_OWNER
from ..exceptions import InvalidSchedule
from ..models import CronJob
from ..store import schedule_views

__all__ = [
    "Mismatch",
    "declared_names",
    "mismatch",
    "owned_elsewhere_q",
    "owned_elsewhere_remedy",
    "undeclared",
    "undeclared_q",
    "undeclared_remedy",
    "undeclared_rows",
]


def declared_names() -> frozenset[str] | None:
    """Names this code declares (``cron.py`` and ``AWA_SCHEDULES``); None if a
    declaration is invalid.

    The system checks report an invalid declaration, and the commands that
    run them stop; a web process starts anyway. There, what this code declares
    is unknown (a ``cron.py`` stopped at its bad ``periodic()``), so no row is
    called undeclared or owned elsewhere: None compares as matching everything.
    """
    try:
        return frozenset(s.name for s in declared_schedules())
    except InvalidSchedule:
        return None


# A filter no row matches: what a comparison with unknown declarations selects.
_NOTHING = Q(pk__in=[])


def undeclared_q(names: frozenset[str] | None) -> Q:
    """Rows no longer declared (see :func:`undeclared`), as a filter."""
    if names is None:
        return _NOTHING
    return Q(retired_at__isnull=True, owner_id=conf.OWNER) & ~Q(name__in=names)


def owned_elsewhere_q(names: frozenset[str] | None) -> Q:
    """Rows this code declares that another deployment owns, as a filter."""
    if names is None:
        return _NOTHING
    other = ~Q(owner_id=conf.OWNER) if conf.OWNER is not None else Q()
    return Q(name__in=names, owner_id__isnull=False) & other


def undeclared_rows(names: frozenset[str] | None = None, using: str = "default") -> QuerySet[CronJob]:
    """Live rows of this deployment's owner that no declaration names, by name
    (``names``: default, :func:`declared_names`; none while that is unknown)."""
    names = declared_names() if names is None else names
    return schedule_views.cron_jobs(using, undeclared_q(names))


def undeclared(row: CronJob, names: frozenset[str] | None) -> bool:
    """True when ``row`` belongs to this deployment's owner and is no longer declared."""
    if names is None:
        return False
    return row.retired_at is None and row.owner_id == conf.OWNER and row.name not in names


def undeclared_remedy(row: CronJob) -> str:
    """What to run to stop a schedule that is no longer declared.

    An owned row is retired (``remove`` refuses it), an unowned one removed.
    """
    verb = "retire" if row.owner_id is not None else "remove"
    return f"manage.py awa cron {verb} {row.name}"


def owned_elsewhere_remedy(owner: str) -> str:
    """What to do about a declaration ignored because another deployment owns the row."""
    if owner == RUNTIME_OWNER:
        return (
            f"a runtime schedule ({owner}) has this name: this code's declaration of it is "
            "ignored; delete the runtime schedule, or remove the declaration from this code"
        )
    return f"owned by {owner}: this code's declaration of it is ignored; remove it from this code"


@dataclass(frozen=True)
class Mismatch:
    """How a row differs from this code's declarations (both False: it matches)."""

    undeclared: bool
    owned_elsewhere: str | None  # the owner whose row this code also declares


def mismatch(row: CronJob, names: frozenset[str] | None) -> Mismatch:
    """Compare one row with the declared ``names`` (see the module docstring)."""
    elsewhere = (
        row.owner_id
        if names is not None and row.name in names and row.owner_id is not None and row.owner_id != conf.OWNER
        else None
    )
    return Mismatch(undeclared=undeclared(row, names), owned_elsewhere=elsewhere)
