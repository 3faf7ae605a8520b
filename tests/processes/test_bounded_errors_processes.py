"""A real ``runtasks --burst`` runs every attempt of a task raising a 10 MB
message or a 5,000-deep chain of exceptions: each attempt's stored traceback
is cut to AWA_ERROR_MAX_CHARS (its end, the exception's own line, kept), the
retries run (attempts 2 and 3), and no log line carries the whole text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from awa_django.models import Job
from tests.testapp import tasks

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.mark.parametrize(
    ("enqueue", "end"),
    [
        (lambda: tasks.raises_huge_message.enqueue(10), "END-OF-HUGE-MESSAGE"),
        (lambda: tasks.raises_deep_chain.enqueue(5000), "ValueError: END-OF-DEEP-CHAIN"),
    ],
    ids=["10-mb-message", "5000-deep-chain"],
)
def test_runtasks__every_attempt_runs_and_stores_a_cut_traceback(
    runtasks: Callable[..., Any], enqueue: Callable[[], Any], end: str
) -> None:
    result = enqueue()
    proc = runtasks("--burst", env={"AWA_RETRY_BACKOFF": "0"})
    assert proc.wait(timeout=300) == 0, proc.output()[-5000:]
    job = Job.objects.get(id=int(result.id))
    assert (job.state, job.attempt, job.max_attempts) == ("failed", 3, 3)
    assert [e["attempt"] for e in job.errors] == [1, 2, 3]  # each attempt ran and failed on its own
    for entry in job.errors:
        assert len(entry["traceback"]) < 20_000 + 100
        assert entry["traceback"].rstrip().endswith(end)
        assert "characters cut (AWA_ERROR_MAX_CHARS)" in entry["traceback"]
    assert "cannot be read" not in proc.output()
    longest = max((len(line) for line in proc.output().splitlines()), default=0)
    assert longest < 3 * 20_000, longest
