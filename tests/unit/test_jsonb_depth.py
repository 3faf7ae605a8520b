"""``db.jsonb.text_depth`` peels a wide value level by level (C-speed string
replaces) and gives the same depth as the exact bracket scan, for any JSON text
and for text that is not JSON at all."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from awa_django.db import jsonb

KEYS = st.text(alphabet='[]{}"\\:, xé\x00', max_size=4)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | KEYS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=40,
)


def scanned(text: str, limit: int) -> int:
    """The exact scan: over the text as it is when it has no more opening
    brackets than the limit (a bound is all that is needed then), else with its
    strings taken out."""
    if text.count("[") + text.count("{") <= limit:
        return jsonb._scan(text, limit)
    return jsonb._scan(jsonb._STRING.sub('""', text), limit)


@given(VALUES, st.integers(0, 12))
def test_text_depth__peeling_agrees_with_the_scan_on_json(value: object, limit: int) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, separators=(",", ":"))):
        assert jsonb.text_depth(text, limit) == scanned(text, limit)


@given(st.text(alphabet='[]{}\x00 ,1"', max_size=30), st.integers(0, 6))
def test_text_depth__peeling_agrees_with_the_scan_on_text_that_is_not_json(text: str, limit: int) -> None:
    assert jsonb.text_depth(text, limit) == scanned(text, limit)


def test_text_depth__a_wide_value_of_a_megabyte_is_peeled_in_a_few_rounds() -> None:
    text = json.dumps({"args": [[]] * 250_000, "kwargs": {"k": "[[[[}"}})
    assert jsonb.text_depth(text, 32) == 3
    deep = "[" * 100_000 + "]" * 100_000
    assert jsonb.text_depth(deep, 32) == 33
