"""Tasks used by the test-suite."""

from __future__ import annotations

import threading

from awa_django.client.compat import task


@task
def record(label: str = "", **extra: object) -> str:
    return label


@task(queue_name="mail", priority=5)
def send_mail(to: str = "") -> str:
    return to


def not_a_task() -> None:
    """A plain function, for validation tests."""


def _effect(label: str, phase: str = "done") -> None:
    import os

    from awa_django.jobcontext import current_fire, current_job

    from .models import Effect

    job = current_job()
    fire = current_fire()
    Effect.objects.create(
        label=label,
        phase=phase,
        job_id=job.id if job else None,
        attempt=job.attempt if job else None,
        schedule=fire.schedule if fire else None,
        fire_at=fire.fire_at if fire else None,
        pid=os.getpid(),
    )


@task
def write_effect(label: str = "effect") -> str:
    """Record one Effect row describing the running job."""
    _effect(label)
    return label


@task
def slow_effect(label: str = "slow", seconds: float = 2.0) -> str:
    """Record 'started', sleep, then record 'done' (for crash tests)."""
    import time

    _effect(label, "started")
    time.sleep(seconds)
    _effect(label, "done")
    return label


@task
def always_fails(label: str = "boom") -> None:
    _effect(label, "attempted")
    raise RuntimeError(f"{label}: this task always fails")


@task
async def async_effect(label: str = "async") -> str:
    from asgiref.sync import sync_to_async

    await sync_to_async(_effect)(label)
    return f"async:{label}"


@task(takes_context=True)
def context_effect(context, label: str = "ctx") -> dict:
    _effect(label)
    return {"attempt": context.attempt, "id": context.task_result.id}


@task
def returns_unserialisable() -> object:
    return object()


class CustomBaseException(BaseException):
    """Not an Exception: the worker must still record it as the attempt's failure."""


@task
def raises_base_exception(kind: str = "system_exit") -> None:
    """Raise a BaseException that is not an Exception."""
    _effect(kind, "attempted")
    if kind == "system_exit":
        raise SystemExit("task called sys.exit")
    if kind == "exit":
        exit(1)
    if kind == "keyboard_interrupt":
        raise KeyboardInterrupt("raised by the task, not a signal")
    raise CustomBaseException("a custom BaseException")


@task
def returns_value(value: object) -> object:
    """Return what a test asks for (unstorable results)."""
    return value


@task
def returns_nul() -> str:
    return "a\x00b"


@task
def returns_lone_surrogate() -> dict:
    return {"text": "\ud800"}


@task
def terminates_own_connection(label: str = "lost") -> str:
    """Succeed, but first kill this thread's database session (the worker's report connection)."""
    import psycopg
    from django.db import connection

    _effect(label)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    return label


@task
def sleeps(seconds: float = 1.0, label: str = "sleeper") -> str:
    import time

    _effect(label, "started")
    time.sleep(seconds)
    _effect(label, "done")
    return label


# Set by a test that runs a Worker in its own process, to let ``gated`` finish.
GATE = threading.Event()


@task
def gated(label: str = "gated") -> str:
    """Record 'started', wait until a test sets GATE (at most 60 s), record 'done'."""
    _effect(label, "started")
    GATE.wait(60)
    _effect(label, "done")
    return label


@task
def meets(label: str = "meet", processes: int = 2) -> str:
    """Record 'started', wait (at most 60 s) until jobs labelled ``label`` have
    started in ``processes`` distinct processes, record 'done'.

    Jobs of this task, more than one worker's concurrency of them, make several
    workers share a queue whatever the machine's speed: the first worker's slots
    stay busy until another worker has taken one.
    """
    import time

    from .models import Effect

    _effect(label, "started")
    deadline = time.monotonic() + 60
    started = Effect.objects.filter(label=label, phase="started")
    while started.values("pid").distinct().count() < processes and time.monotonic() < deadline:
        time.sleep(0.05)
    _effect(label, "done")
    return label


# Set by ``sleeps_then_returns`` once its 'started' row is written and the
# INSERT's reply read: a test in the worker's process that cuts the connection
# after this cannot break the task's own statement.
SLEEPER_STARTED = threading.Event()


@task
def sleeps_then_returns(seconds: float = 1.0, label: str = "sleeper") -> str:
    """Record 'started', sleep, return: no database use after the sleep."""
    import time

    _effect(label, "started")
    SLEEPER_STARTED.set()
    time.sleep(seconds)
    return label


@task
def logs_progress(label: str = "progress") -> str:
    """Log one line from inside a task (structured-logging tests)."""
    import logging

    logging.getLogger(__name__).info("task %s working", label, extra={"event": "test.task_log"})
    return label


@task
def backend_pid() -> int:
    """The PostgreSQL backend pid of the connection this task thread uses."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid: int = cursor.fetchone()[0]
    return pid


@task
def leaves_a_transaction_open() -> int:
    """Return this connection's backend pid, leaving autocommit off (a task bug)."""
    from django.db import transaction

    pid = backend_pid.call()
    transaction.set_autocommit(False)
    return pid


@task
def raises_huge_message(megabytes: int = 10) -> None:
    """Fails every attempt with a message of ``megabytes`` MB (its end is recognisable)."""
    raise ValueError("x" * (megabytes * 1024 * 1024) + " END-OF-HUGE-MESSAGE")


@task
def raises_deep_chain(depth: int = 5000) -> None:
    """Fails every attempt with a chain of ``depth`` exceptions, each raised from the one before."""
    error: BaseException = KeyError("chain-start")
    for level in range(1, depth):
        try:
            raise RuntimeError(f"level {level}") from error
        except RuntimeError as raised:
            error = raised
    raise ValueError("END-OF-DEEP-CHAIN") from error
