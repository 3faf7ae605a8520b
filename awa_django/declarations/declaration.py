"""Declaring schedules: ``periodic()``, ``AWA_SCHEDULES`` and ``cron.py`` discovery.

A :class:`Schedule` (:mod:`.shape`) is a fully validated, immutable
definition, built by :func:`build_schedule` (:mod:`.builder`).
Validation is eager: every problem is an
:class:`~awa_django.exceptions.InvalidSchedule` naming the schedule and the
field, raised before anything touches the database.
"""

from __future__ import annotations

import math
import sys
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from importlib import import_module
from pathlib import Path
from types import TracebackType
from typing import Any

from django.apps import apps
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import module_has_submodule

from .. import validation
from ..client.compat import Task
from ..conf import conf
from ..exceptions import InvalidSchedule, UnknownScheduleOption
from .builder import (
    MAX_ATTEMPTS_RANGE,
    MAX_NAME_LENGTH,
    MAX_TAGS,
    OVERLAP_POLICIES,
    POLICIES,
    RESERVED_METADATA_KEYS,
    _parse_cron,
    build_schedule,
)
from .shape import SETTINGS_KEYS, Schedule

__all__ = [
    "MAX_ATTEMPTS_RANGE",
    "MAX_NAME_LENGTH",
    "MAX_TAGS",
    "OVERLAP_POLICIES",
    "POLICIES",
    "RESERVED_METADATA_KEYS",
    "SETTINGS_KEYS",
    "InvalidSchedule",
    "Registry",
    "Schedule",
    "UnknownScheduleOption",
    "_parse_cron",
    "autodiscover",
    "build_schedule",
    "declared_schedules",
    "discovery_errors",
    "finite",
    "name_identity",
    "periodic",
    "registry",
    "settings_schedules",
]


def name_identity(name: str) -> str:
    """What two names look like to a reader: Unicode NFKC, case folded.

    ``'café'`` written precomposed or with a combining accent, ``'Nightly'``
    and ``'nightly'``, ``'ﬁle'`` and ``'file'``: each pair shares an
    identity. Declaring both is an error: in a listing, an operator could not
    tell which one they pause.
    """
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def _lookalike(name: str, other: str, where: str) -> InvalidSchedule:
    return InvalidSchedule(
        name, "name", f"differs from {other!r} ({where}) only in case or Unicode form; choose distinct names"
    )


class Registry:
    """Schedules declared in code with :func:`periodic` (one per process)."""

    def __init__(self) -> None:
        self._schedules: dict[str, Schedule] = {}
        self._identities: dict[str, str] = {}  # name_identity(name) -> name

    def add(self, schedule: Schedule) -> None:
        """Register ``schedule``; a second declaration of its name (or a look-alike) is an error."""
        existing = self._schedules.get(schedule.name)
        if existing is not None:
            raise InvalidSchedule(
                schedule.name,
                "name",
                f"declared twice ({existing.source or 'first'} and {schedule.source or 'again'})",
            )
        twin = self.lookalike(schedule.name)
        if twin is not None:
            raise _lookalike(schedule.name, twin.name, twin.source or "declared first")
        self._schedules[schedule.name] = schedule
        self._identities[name_identity(schedule.name)] = schedule.name

    def lookalike(self, name: str) -> Schedule | None:
        """The registered schedule whose name has the identity of ``name`` (itself included)."""
        identity = name_identity(name)
        found = self._identities.get(identity)
        stale = found is not None and found not in self._schedules
        if stale or len(self._identities) != len(self._schedules):
            # _schedules was edited directly (a test saving and restoring it): re-index.
            self._identities = {name_identity(n): n for n in self._schedules}
            found = self._identities.get(identity)
        return None if found is None else self._schedules[found]

    def remove(self, name: str) -> None:
        """Forget a schedule (tests and interactive sessions)."""
        if self._schedules.pop(name, None) is not None:
            self._identities.pop(name_identity(name), None)

    def clear(self) -> None:
        """Forget every code-declared schedule (tests)."""
        self._schedules.clear()
        self._identities.clear()

    def __iter__(self) -> Any:
        return iter(list(self._schedules.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._schedules


registry = Registry()


def periodic(
    name: str,
    cron: str | None = None,
    task: Task[Any, Any] | str | None = None,
    *,
    every: timedelta | int | None = None,
    anchor: datetime | None = None,
    timezone: str = "UTC",
    args: Iterable[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    queue: str | None = None,
    priority: int | None = None,
    max_attempts: int | None = None,
    tags: Iterable[str] = (),
    metadata: Mapping[str, Any] | None = None,
    missed_fire_policy: str = "coalesce",
    overlap: str = "allow",
    starting_deadline: timedelta | float | None = None,
    jitter: timedelta | float = 0,
    unique_key: str | None = None,
    concurrency_key: str | None = None,
    concurrency_limit: int | None = None,
) -> Schedule:
    """Declare a periodic schedule that runs ``task`` on the ``cron`` expression,
    or ``every`` so long (a timedelta or whole seconds) from ``anchor`` (default:
    when the row is created, to the second).

    ``unique_key`` / ``concurrency_key`` (a fixed string or a template over
    ``{name}`` and ``{slot}``) and ``concurrency_limit`` give each fired job
    flow control, as :func:`awa_django.enqueue` does.

    Call it at import time of an app's ``cron.py`` (autodiscovered). The
    declaration is validated immediately; any problem raises
    :class:`~awa_django.InvalidSchedule`. ``runcron`` syncs declared schedules
    into ``awa_cron_jobs``. Returns the validated :class:`Schedule`.
    """
    caller = sys._getframe(1)  # cheap, unlike inspect.stack(): no source is read
    schedule = build_schedule(
        name,
        cron,
        task,
        every=every,
        anchor=anchor,
        timezone=timezone,
        args=args,
        kwargs=kwargs,
        queue=queue,
        priority=priority,
        max_attempts=max_attempts,
        tags=tags,
        metadata=metadata,
        missed_fire_policy=missed_fire_policy,
        overlap=overlap,
        starting_deadline=starting_deadline,
        jitter=jitter,
        source=f"{caller.f_code.co_filename}:{caller.f_lineno}",
        unique_key=unique_key,
        concurrency_key=concurrency_key,
        concurrency_limit=concurrency_limit,
    )
    registry.add(schedule)
    return schedule


# System checks validate AWA_SCHEDULES three times and runcron once more: with
# 10,000 declared, validating each time would be most of a 3 s start-up. One validation is
# kept while the declarations read the same; any setting change forgets it (the
# result also depends on AWA_MAX_ARGS_BYTES and the task backends).
_validated: tuple[str, list[Schedule], list[InvalidSchedule]] | None = None


def settings_schedules() -> tuple[list[Schedule], list[InvalidSchedule]]:
    """Validate ``AWA_SCHEDULES``; return the good schedules and every error."""
    global _validated
    declared = conf.SCHEDULES
    # repr, not identity: a dict edited in place must not return stale schedules.
    try:
        fingerprint = repr(declared)
    except Exception:  # a value too deep or with a broken __repr__: validate anew
        return _validate_settings(declared)
    if _validated is None or _validated[0] != fingerprint:
        _validated = (fingerprint, *_validate_settings(declared))
    return list(_validated[1]), list(_validated[2])


@receiver(setting_changed)
def _forget_validated_settings(**kwargs: Any) -> None:
    global _validated
    _validated = None


def _validate_settings(declared: Any) -> tuple[list[Schedule], list[InvalidSchedule]]:
    if not isinstance(declared, Mapping):
        return [], [InvalidSchedule(None, "AWA_SCHEDULES", "must be a dict of name -> options")]
    good: list[Schedule] = []
    errors: list[InvalidSchedule] = []
    seen: dict[str, str] = {}  # name_identity -> the first name declared with it
    for name, options in declared.items():
        try:
            if isinstance(name, str) and not validation.text_problem(name):
                first = seen.setdefault(name_identity(name), name)
                if first != name:
                    raise _lookalike(name, first, "in AWA_SCHEDULES")
            if not isinstance(options, Mapping):
                raise InvalidSchedule(name, "AWA_SCHEDULES", "options must be a dict")
            unknown = sorted(map(str, set(options) - SETTINGS_KEYS))
            if unknown:
                raise UnknownScheduleOption(
                    name, unknown[0], f"is not a schedule option (unknown: {', '.join(unknown)})"
                )
            if "task" not in options:
                raise InvalidSchedule(name, "task", "is required")
            extra = {k: v for k, v in options.items() if k not in ("cron", "task")}
            good.append(
                build_schedule(
                    name, options.get("cron"), options["task"], source="settings.AWA_SCHEDULES", **extra
                )
            )
        except InvalidSchedule as exc:
            errors.append(exc)
    return good, errors


def declared_schedules() -> list[Schedule]:
    """Every schedule this process declares (settings and ``cron.py``), by name.

    Raises the first :class:`InvalidSchedule` if any declaration is invalid or a
    name is declared both in settings and in code.
    """
    from_settings, errors = settings_schedules()
    errors = [exc for _, exc in discovery_errors()] + errors
    if errors:
        raise errors[0]
    by_name = {s.name: s for s in registry}
    for schedule in from_settings:
        if schedule.name in by_name:
            raise InvalidSchedule(
                schedule.name,
                "name",
                f"declared in AWA_SCHEDULES and in code ({by_name[schedule.name].source})",
            )
        twin = registry.lookalike(schedule.name)
        if twin is not None:
            raise _lookalike(schedule.name, twin.name, f"declared in code, {twin.source}")
        by_name[schedule.name] = schedule
    return [by_name[n] for n in sorted(by_name)]


def finite(value: float) -> bool:
    """True for a finite, non-negative number (used by the system checks in ``checks``)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


# An InvalidSchedule raised while importing an app's cron.py, by the file and
# line that raised it.
# The system checks report each as one error naming the schedule and the field
# (so check, migrate, runserver, runcron and runtasks all print that line, not
# a traceback), and declared_schedules() raises the first.
_discovery_errors: dict[str, InvalidSchedule] = {}


def discovery_errors() -> list[tuple[str, InvalidSchedule]]:
    """(``path:line``, error) for each ``cron.py`` whose import raised InvalidSchedule."""
    return sorted(_discovery_errors.items(), key=lambda item: item[0])


def _where_raised(exc: BaseException, path: Path) -> str:
    """``path:line`` of the line in ``path`` that raised ``exc`` (relative to the
    working directory when under it), as an editor opens it."""
    line = next(
        (
            tb.tb_lineno
            for tb in _tracebacks(exc.__traceback__)
            if tb.tb_frame.f_code.co_filename == str(path)
        ),
        None,
    )
    try:
        shown = str(path.relative_to(Path.cwd()))
    except ValueError:
        shown = str(path)
    return shown if line is None else f"{shown}:{line}"


def _tracebacks(tb: TracebackType | None) -> Iterator[TracebackType]:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def autodiscover() -> None:
    """Import every installed app's ``cron`` module (like ``admin.autodiscover``).

    A module that declares an invalid schedule is recorded (see
    :func:`discovery_errors`) and the other apps' modules are still imported;
    any other error at import propagates, as for any module.
    """
    for app_config in apps.get_app_configs():
        if not module_has_submodule(app_config.module, "cron"):
            continue
        try:
            import_module(f"{app_config.name}.cron")
        except InvalidSchedule as exc:
            _discovery_errors[_where_raised(exc, Path(app_config.path) / "cron.py")] = exc
