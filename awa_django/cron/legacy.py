"""Where an expression fires at other times than under croniter's matching (check W080).

``legacy_difference`` tells, from an expression's text and its compiled sets,
whether it fires at other times than under the earlier croniter-based matching.
"""

from __future__ import annotations

import functools
import re

from .parse import (
    _BOUNDS,
    _DOM,
    _DOW,
    _FIELD_NAMES,
    _ITEM,
    _MONTH_LENGTHS,
    CronExpression,
    _FieldError,
    _number,
    _parse_days,
    _parse_values,
    _Plan,
)

__all__ = ["legacy_difference"]


# Schedules share expressions: system checks of 10,000 declared schedules ask
# about each expression once, not once per schedule (start-up stays within 3 s).
@functools.lru_cache(maxsize=4096)
def legacy_difference(expr: CronExpression) -> str | None:
    """Why ``expr`` fires at other times than under awa_django's earlier croniter-based matching.

    None when the fire times are the same. Found from the text: the shapes that changed
    are a day field starting with ``*`` (but not ``*`` itself) next to a restricted
    one, ``L``/``W``/``#`` next to a restricted other day field, ``nW`` past the end of
    a month of the set, and croniter's reading of a range with equal ends (``5-5``,
    ``7-7``) as "every value".
    """
    dom, dow = expr.fields[_DOM].lower(), expr.fields[_DOW].lower()
    # croniter read a day field as "every day" when it had a bare "*" (or "?") item, or
    # listed every value while the other day field had a "*" somewhere; it OR'ed the
    # fields only when neither was read so.
    dom_values = _parse_days(_DOM, dom).values
    dow_values = _parse_days(_DOW, dow).values
    dom_open = bool({"*", "?"} & set(dom.split(","))) or (len(dom_values) == 31 and "*" in dow)
    dow_open = bool({"*", "?"} & set(dow.split(","))) or (len(dow_values) == 7 and "*" in dom)
    legacy_rule = "and" if dom_open or dow_open else "or"
    special = bool(re.search(r"\d*w", dom) or re.search(r"[#l]", dow))
    if not special and _Plan(expr.fields, legacy_rule).month_masks() != expr._plan.month_masks():
        star = next((f for f in (dom, dow) if f.startswith("*")), None)
        if star is not None:
            return (
                f"day field {star!r} starts with '*': it now narrows the other day field "
                "(AND), as in classic cron"
            )
        return "both day fields are restricted: a day matching either one now fires (OR)"
    # Next to "nW", "#" or "dL" croniter did not OR the day fields; unless the days are
    # those of that special field alone, assume they changed.
    if special and legacy_rule == "or":
        sec, minute, hour, _, month, _ = expr.fields
        alone = []
        if re.search(r"\d*w", dom):
            alone.append(_Plan((sec, minute, hour, dom, month, "*")).month_masks())
        if re.search(r"[#l]", dow):
            alone.append(_Plan((sec, minute, hour, "*", month, dow)).month_masks())
        if len(alone) == 2 or expr._plan.month_masks() not in alone:
            return "'W', '#' or 'L' now adds its days to those of the other day field (OR)"
    for item in dom.split(","):
        if item.endswith("w") and item[:-1].isdigit() and int(item[:-1]) > 28:
            n = int(item[:-1])
            if any(_MONTH_LENGTHS[m] < n or m == 2 for m in expr._plan.months):
                return f"'{n}W' no longer fires in months that have no day {n}"
    # croniter read a range with equal ends ("5-5", "7-7", "jan-1/2") as every value.
    for index, text in enumerate(expr.fields):
        for item in text.lower().split(","):
            match = _ITEM.fullmatch(item)
            if match is None or match["end"] is None or match["start"] == "*":
                continue
            ends = [_number(index, match[k]) % (7 if index == _DOW else 100) for k in ("start", "end")]
            if ends[0] != ends[1]:
                continue
            low, high = _BOUNDS[index]
            full = set(range(7)) if index == _DOW else set(range(low, high + 1))
            try:
                values = _parse_values(index, text)
            except _FieldError:  # "L", "W" or "#" in the list: never every value
                values = set()
            if values != full:
                return (
                    f"range {item!r} in the {_FIELD_NAMES[index]} field now means one value, not every value"
                )
    return None
