"""QUEUE_LIMITS parsing: rates, the claim's form of the limits, and every problem named."""

from __future__ import annotations

from typing import Any

import pytest

from awa_django.client.limits import claim_limits, limit_label, parse_rate, queue_limits_problems


@pytest.mark.parametrize(
    ("rate", "parsed"),
    [("100/m", (100, 60)), ("1/s", (1, 1)), ("10/30s", (10, 30)), ("5/h", (5, 3600)), ("2/7d", (2, 604800))],
)
def test_parse_rate__count_and_period_in_seconds(rate: str, parsed: tuple[int, int]) -> None:
    assert parse_rate(rate) == parsed


@pytest.mark.parametrize("rate", ["100", "0/m", "100/w", "1.5/m", "-1/m", "100/0s", " 1/m", 100, None])
def test_parse_rate__refuses_malformed_rates(rate: Any) -> None:
    with pytest.raises(ValueError, match="rate|<count>/<period>"):
        parse_rate(rate)
    assert queue_limits_problems({"q": {"rate": rate}})


def test_claim_limits__the_claims_form() -> None:
    value = {"emails": {"rate": "100/m", "concurrency": 5}, "b": {"concurrency": 2}}
    assert claim_limits(value) == {
        "emails": {"rate": 100, "period": 60, "concurrency": 5},
        "b": {"concurrency": 2},
    }
    assert limit_label(claim_limits(value)["emails"]) == "100/60s, 5 at once"
    assert claim_limits(None) == {} and claim_limits({"q": {"rate": "x"}}) == {}


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("emails", "must be a dict"),
        ({"q": 5}, "QUEUE_LIMITS['q']"),
        ({"q": {"concurrency": 0}}, "QUEUE_LIMITS['q']['concurrency']"),
        ({"q": {"concurrency": True}}, "QUEUE_LIMITS['q']['concurrency']"),
        ({"q": {"rat": "1/s"}}, "unknown key 'rat'"),
        ({"q": {"rate": "1/x"}}, "QUEUE_LIMITS['q']['rate']"),
        ({"": {"rate": "1/s"}}, "queue name"),
    ],
)
def test_queue_limits_problems__name_what_is_wrong(value: Any, named: str) -> None:
    problems = queue_limits_problems(value)
    assert problems and any(named in p for p in problems)
