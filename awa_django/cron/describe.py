"""Human-readable cron expressions ("At 09:00, Monday through Friday").

Shared by the admin and ``manage.py awa cron list|show``. The wording comes
from cron-descriptor, fed our normalised fields, except for the two day fields
when cron-descriptor would misdescribe them: it does not know classic cron's
rule (both fields restricted: a day matching EITHER fires; a field starting
with ``*``: the day must match BOTH, see ``days.days_anded``), and it
misreads lists that mix ``L``, ``W`` or ``#`` with other items. Those day
fields are worded here from the parsed fields.
"""

from __future__ import annotations

import functools
import logging

from cron_descriptor import ExpressionDescriptor, Options

from . import search
from .days import _DayField, days_anded
from .parse import _DOM, _DOW, _parse_days

logger = logging.getLogger("awa_django.humanize")

_WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_ORDINALS = ("", "first", "second", "third", "fourth", "fifth")


def _options() -> Options:
    options = Options()
    # Fixed English, 24-hour clock: the same text in the shell, the admin and docs.
    options.locale_code = "en_US"
    options.use_24hour_time_format = True
    options.day_of_week_start_index_zero = True
    return options


def _descriptor(fields: tuple[str, ...]) -> ExpressionDescriptor:
    # cron-descriptor reads a 6-field expression as seconds-first only when it cannot be
    # a year-last one, so it always gets the unambiguous 7-field form (year "*").
    return ExpressionDescriptor(" ".join((*fields, "*")), _options())


# A list (admin page, ``awa cron list``) shows the same few texts on many
# rows: each is described once per process.
@functools.lru_cache(maxsize=4096)
def describe_cron(expression: str) -> str:
    """A sentence describing ``expression`` (5 fields, 6 seconds-first, or a macro).

    An invalid expression is returned as it is.
    """
    try:
        parsed = search.parse_cron(expression)
    except search.CronError:
        return expression
    try:
        return _describe(parsed.fields)
    except Exception:  # cron-descriptor rejects a few shapes our parser accepts
        logger.debug("cannot describe %r", expression, extra={"event": "cron.describe_failed"})
        return parsed.describe()


def _describe(fields: tuple[str, ...]) -> str:
    sec, minute, hour, dom_text, month, dow_text = fields
    dom, dow = _parse_days(_DOM, dom_text), _parse_days(_DOW, dow_text)
    anded = days_anded(dom_text, dow_text)
    # A field matching every day says nothing when ANDed, and makes every day fire when ORed.
    dom_all, dow_all = len(dom.values) == 31, len(dow.values) == 7
    if dom_all or (dow_all and not anded):
        dom_text = "*"
    if dow_all or (dom_all and not anded):
        dow_text = "*"
    dom_open, dow_open = dom_text in ("*", "?"), dow_text in ("*", "?")
    if (dom_open or dow_open) and not (_mixed(dom_text, "lw") or _mixed(dow_text, "#l")):
        return str(_descriptor((sec, minute, hour, dom_text, month, dow_text)).get_description())
    descriptor = _descriptor((sec, minute, hour, "*", month, "*"))
    if dow_open:
        days = _dom_phrase(fields, dom)
    elif dom_open:
        days = f"on {_dow_phrase(dow, 'and')}"
    elif anded:
        days = f"{_dom_phrase(fields, dom)}, if that day is {_dow_phrase(dow, 'or')}"
    else:
        days = f"{_dom_phrase(fields, dom)} or on {_dow_phrase(dow, 'and')}"
    text = f"{descriptor.get_time_of_day_description()}, {days}{descriptor.get_month_description()}"
    text = descriptor.transform_verbosity(text, use_verbose_format=False)
    return str(ExpressionDescriptor.transform_case(text, _options().casing_type))


def _mixed(text: str, specials: str) -> bool:
    """A list that mixes ``L``/``W``/``#`` items with others (cron-descriptor misreads it)."""
    return "," in text and any(c in text.lower() for c in specials)


def _join(items: list[str], conjunction: str) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {conjunction} {items[-1]}"


def _runs(values: frozenset[int], size: int) -> list[tuple[int, int]]:
    """Values 0..size-1 as ascending (first, last) runs of consecutive values. Runs at both
    ends that make 3 or more together wrap around, first (weekdays: Saturday through Monday)."""
    runs: list[tuple[int, int]] = []
    for value in sorted(values):
        if runs and runs[-1][1] == value - 1:
            runs[-1] = (runs[-1][0], value)
        else:
            runs.append((value, value))
    if len(runs) > 1 and runs[0][0] == 0 and runs[-1][1] == size - 1:
        wrapped = (runs[-1][0], runs[0][1])
        if (wrapped[1] - wrapped[0]) % size >= 2:
            runs = [wrapped, *runs[1:-1]]
    return runs


def _run_items(runs: list[tuple[int, int]], name: dict[int, str], size: int) -> list[str]:
    items = []
    for start, end in runs:
        length = (end - start) % size + 1
        if length >= 3:
            items.append(f"{name[start]} through {name[end]}")
        else:
            items.extend(name[(start + i) % size] for i in range(length))
    return items


def _dow_phrase(field: _DayField, conjunction: str) -> str:
    """``Monday through Friday``, ``Monday and the last Friday of the month`` ..."""
    names = dict(enumerate(_WEEKDAYS))
    items = _run_items(_runs(field.values, 7), names, 7)
    items += [
        f"the {_ORDINALS[k]} {_WEEKDAYS[d]} of the month" for d, k in sorted(field.nth, key=lambda i: i[::-1])
    ]
    items += [f"the last {_WEEKDAYS[d]} of the month" for d in sorted(field.last_weekday)]
    return _join(items, conjunction)


def _dom_phrase(fields: tuple[str, ...], field: _DayField) -> str:
    """The day-of-month field alone: cron-descriptor's words, unless it mixes ``L``/``W``."""
    if not _mixed(fields[_DOM], "lw"):
        sec, minute, hour, dom_text, month, _ = fields
        words = _descriptor((sec, minute, hour, dom_text, month, "*")).get_day_of_month_description()
        return str(words).removeprefix(", ")
    # Size 32: days 1-31 never wrap (there is no day 0).
    names = {day: f"day {day}" for day in range(32)}
    items = _run_items(_runs(field.values, 32), names, 32)
    items += [f"the weekday nearest day {n}" for n in sorted(field.nearest) if n]
    items += ["the last day"] * field.last + ["the last weekday"] * (0 in field.nearest)
    return f"on {_join(items, 'and')} of the month"


def describe_schedule(cron_expr: str | None, every_seconds: int | None) -> str:
    """A schedule's timing in words: its interval ("every 90 seconds") or its expression's sentence."""
    if every_seconds is not None:
        return search.describe_every(every_seconds)
    return describe_cron(cron_expr or "")
