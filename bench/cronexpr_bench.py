"""Time next_fire per call for ordinary and pathological expressions (issue 14, item 5).

Run: .venv/bin/python bench/cronexpr_bench.py
Timing claims live here, never in unit tests (tests count table look-ups instead).
"""

from __future__ import annotations

import timeit
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from awa_django.cron.search import next_fire, parse_cron

EXPRESSIONS = [
    "0 0 1 1 *",  # yearly: the normal case
    "*/5 * * * *",
    "0 9 * * 1-5",
    "0 0 31 4 1",  # day that never occurs in the restricted month (OR with Mondays)
    "0 0 31 2-4 1#5",
    "0 0 29 2 */7",  # 29 February on a Sunday: next in 2032
]


def main() -> None:
    zone = ZoneInfo("Europe/Berlin")
    starts = [datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=37 * k, hours=k) for k in range(30)]
    for text in EXPRESSIONS:
        expression = parse_cron(text)
        runs = 2000
        seconds = timeit.timeit(
            lambda e=expression: [next_fire(e, zone, s) for s in starts], number=runs // 30
        )
        parse = timeit.timeit(lambda t=text: parse_cron(t), number=200) / 200
        print(
            f"{text:20} {seconds / (runs // 30 * len(starts)) * 1e6:8.1f} us per next_fire, "
            f"{parse * 1e6:8.1f} us per parse_cron"
        )


if __name__ == "__main__":
    main()
