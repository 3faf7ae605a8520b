"""Local wall-clock times against a time zone: which exist once, twice (a fold) or
not at all (a gap), where the offset changes, and what a schedule's DST policy does
with each (pure: stdlib only).

``search`` maps fire times through these: by default under the Vixie/Debian cron
DST policy, or under the explicit choices of a :class:`DstPolicy`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from .parse import _SECOND, CronError, CronExpression

DstRepeated = Literal["first", "last", "both"]
DstSkipped = Literal["shift", "skip"]

# The accepted values, in the order the documentation and error messages name them.
DST_REPEATED_CHOICES: tuple[DstRepeated, ...] = ("first", "last", "both")
DST_SKIPPED_CHOICES: tuple[DstSkipped, ...] = ("shift", "skip")

# How a gap's wall times fire once resolved: "transition" (all at the transition
# instant: Vixie's fixed-time rule), "shift" (each moved forward by the gap's length),
# "skip" (not at all).
_GapMode = Literal["transition", "shift", "skip"]


@dataclass(frozen=True, slots=True)
class DstPolicy:
    """What a schedule fires for local times that a DST change repeats or skips.

    ``repeated`` is for a wall time that occurs twice (the clocks go back): ``"first"``
    fires at its first occurrence only, ``"last"`` at its second only, ``"both"`` at
    both. ``skipped`` is for a wall time that does not occur (the clocks go forward):
    ``"shift"`` fires at that wall time read on the offset before the change, which is
    the wall time moved forward by the gap's length (02:30 in a 02:00->03:00 gap fires
    at 03:30 on the new offset); ``"skip"`` does not fire it. An explicit choice applies
    to every expression alike. ``None`` (the default) keeps the Vixie cron rule for that
    side: a fixed-time expression fires a repeated time at its first occurrence and the
    skipped times of one gap once, at the transition instant; a wildcard expression (its
    minute or hour field starts with ``*``) fires a repeated time twice and skips the gap.
    Fires that land on one instant are one fire.
    """

    repeated: DstRepeated | None = None
    skipped: DstSkipped | None = None

    def __post_init__(self) -> None:
        if self.repeated is not None and self.repeated not in DST_REPEATED_CHOICES:
            raise CronError(_bad_choice("dst_repeated", self.repeated, DST_REPEATED_CHOICES))
        if self.skipped is not None and self.skipped not in DST_SKIPPED_CHOICES:
            raise CronError(_bad_choice("dst_skipped", self.skipped, DST_SKIPPED_CHOICES))

    @property
    def is_vixie(self) -> bool:
        """True when both sides follow the Vixie cron rule (the default)."""
        return self.repeated is None and self.skipped is None

    def modes(self, expr: CronExpression) -> tuple[DstRepeated, _GapMode]:
        """The fold and gap behaviour for ``expr``: the explicit choice, or Vixie's."""
        fixed = expr.fixed_time
        repeated: DstRepeated = self.repeated or ("first" if fixed else "both")
        skipped: _GapMode = self.skipped or ("transition" if fixed else "skip")
        return repeated, skipped


# The default: Vixie cron's rule for both sides.
VIXIE = DstPolicy()


def _bad_choice(option: str, value: object, choices: tuple[str, ...]) -> str:
    accepted = ", ".join(repr(c) for c in choices)
    return f"{option} must be one of {accepted} or None (the Vixie cron rule), got {value!r}"


def _naive(instant: datetime) -> datetime:
    return instant.replace(tzinfo=None, microsecond=0)


def _transition(tz: ZoneInfo, lo: datetime, hi: datetime) -> tuple[datetime, datetime, datetime]:
    """Find the offset change in (lo, hi]: (instant, its wall time on the old offset, on the new).

    The two wall times bound the gap (old..new) or the fold (new..old) in local time.
    zoneinfo has no public list of transitions, so this bisects on whole seconds.
    lo/hi are the two readings (fold=0/1) of one local time, so they are at most one
    DST shift apart, which takes about 12 steps.
    """
    old = lo.astimezone(tz).utcoffset() or timedelta(0)
    while hi - lo > _SECOND:
        mid = (lo + (hi - lo) / 2).replace(microsecond=0)
        if mid.astimezone(tz).utcoffset() == old:
            lo = mid
        else:
            hi = mid
    return hi, _naive(hi + old), _naive(hi + (hi.astimezone(tz).utcoffset() or timedelta(0)))


def _classify(naive: datetime, tz: ZoneInfo) -> tuple[str, datetime, datetime]:
    """Return (kind, first, second) for a local time; kind is "single", "fold" or "gap".

    Under PEP 495, fold=0 reads a local time with the offset in force before a
    transition and fold=1 with the one after. If converting back gives a different
    wall time, the time lies in a gap. If it round-trips but the two readings differ,
    it is ambiguous. For a fold, first < second are the two occurrences. For a gap,
    first < second bracket the transition instant.
    """
    a = naive.replace(tzinfo=tz, fold=0).astimezone(UTC)
    b = naive.replace(tzinfo=tz, fold=1).astimezone(UTC)
    if _naive(a.astimezone(tz)) != naive:
        return "gap", min(a, b), max(a, b)
    return ("fold" if a != b else "single"), a, b


def _in_fold(local: datetime) -> bool:
    return local.replace(fold=1 - local.fold).utcoffset() != local.utcoffset()


def _gap_behind(tz: ZoneInfo, instant: datetime) -> tuple[datetime, datetime, datetime] | None:
    """The gap whose wall times, moved forward by its length, can land after ``instant``.

    Returns (gap start, gap end, ``instant``'s wall time on the offset before the
    gap), naive; None unless ``instant`` is less than one gap length after a
    spring-forward transition of the last day. Wall times of the gap after the third
    value are the gap's shifted fires that come after ``instant``.
    """
    # Offsets change on whole seconds; _transition bisects on whole seconds.
    whole = instant.replace(microsecond=0)
    day_before = whole - timedelta(days=1)
    old = day_before.astimezone(tz).utcoffset() or timedelta(0)
    new = whole.astimezone(tz).utcoffset() or timedelta(0)
    if old >= new:
        return None
    t, gap_start, gap_end = _transition(tz, day_before, whole)
    before = (t - _SECOND).astimezone(tz).utcoffset() or timedelta(0)
    wall = _naive(instant + before)
    if not gap_start <= wall < gap_end:
        return None
    return gap_start, gap_end, wall
