"""Local wall-clock times against a time zone: which exist once, twice (a fold) or
not at all (a gap), and where the offset changes (pure: stdlib only).

``search`` maps fire times through these under the Vixie/Debian cron DST policy.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from .parse import _SECOND


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
