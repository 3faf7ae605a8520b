"""Tasks whose failures are hard to store or to print (tests/db/test_backend_contract.py).

The module path is stored in job rows, so it keeps its name."""

from __future__ import annotations

from awa_django.client.compat import task

# Texts PostgreSQL text and jsonb refuse: a NUL character, a lone surrogate.
UNSTORABLE_MESSAGES = {
    "nul": "before\x00after",
    "surrogate": "half \ud800 pair",
    "both": "nul \x00 and \udfff too",
}


class UnprintableError(Exception):
    """An exception whose ``str()`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("UnprintableError.__str__ raised")


class UnprintableBaseError(BaseException):
    """Not an Exception, and ``str()`` raises a BaseException too."""

    def __str__(self) -> str:
        raise SystemExit("__str__ exits")


@task
def raises_unstorable_message(kind: str = "nul") -> None:
    raise ValueError(UNSTORABLE_MESSAGES[kind])


@task
def raises_unprintable() -> None:
    raise UnprintableError("hidden")


@task
def raises_unprintable_base() -> None:
    raise UnprintableBaseError()


@task
def succeeds(label: str = "fine") -> str:
    return label
