"""Turn a job's ``kind`` (a dotted path stored in a row) into a ``Task``, safely.

Importing a module runs its module-level code, and a row's ``kind`` is data
anyone with INSERT on ``awa_jobs`` can write. So a kind is imported only when
its module belongs to an installed app or to a prefix listed in
``AWA_TASK_MODULES``; ``kind = 'this.x'`` never imports ``this``.

Two outcomes besides a task:

* :class:`TaskNotHere`: the module is not part of this deployment (not
  allowed here, or absent). Another deployment sharing the queue may have it,
  so the worker hands the job back, for at most ``AWA_UNKNOWN_TASK_TIMEOUT``.
* :class:`TaskNotRunnable`: the path can never name a task here (relative or
  malformed, importing it raises, no such attribute, not a ``@task``). The job
  fails at once with this message. A ``KeyboardInterrupt`` raised by the
  import counts too, unless it may be a real Ctrl-C (:func:`may_be_ctrl_c`).
"""

from __future__ import annotations

import importlib
import re
import signal
import threading
from typing import Any

from django.apps import apps
from django.core.signals import setting_changed
from django.dispatch import receiver

from ..conf import conf
from ..db.jsonb import Undecodable
from .compat import InvalidTask, Task
from .payloads import exception_text

DOTTED_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


class TaskNotRunnable(Exception):
    """The kind can never be run by this code: fail the job."""


class TaskNotHere(Exception):
    """The kind's module is not part of this deployment: hand the job back."""


def allowed_prefixes() -> list[str]:
    """Module prefixes whose tasks may be imported: installed apps + ``AWA_TASK_MODULES``."""
    extra = conf.TASK_MODULES
    return [config.name for config in apps.get_app_configs()] + [str(p) for p in (extra or ())]


def is_allowed_module(module: str) -> bool:
    """True if ``module`` is, or is inside, an allowed prefix."""
    allowed = _ALLOWED.get(module)
    if allowed is None:
        allowed = any(module == p or module.startswith(p + ".") for p in allowed_prefixes())
        if len(_ALLOWED) < ALLOWED_CACHE_SIZE:  # a kind is data: never an unbounded cache
            _ALLOWED[module] = allowed
    return allowed


# What is_allowed_module answered, per module path (the worker asks once per
# job); forgotten when the settings it depends on change.
ALLOWED_CACHE_SIZE = 1024
_ALLOWED: dict[str, bool] = {}


@receiver(setting_changed)
def _forget_allowed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("INSTALLED_APPS", "AWA_TASK_MODULES"):
        _ALLOWED.clear()


def load_task(kind: Any) -> Task[Any, Any]:
    """The ``Task`` at ``kind``; raises :class:`TaskNotHere` or :class:`TaskNotRunnable`."""
    if not isinstance(kind, str) or not DOTTED_PATH.fullmatch(kind):
        raise TaskNotRunnable(f"task path {kind!r} is not an absolute dotted path (module.name)")
    module_path, _, name = kind.rpartition(".")
    if not is_allowed_module(module_path):
        raise TaskNotHere(
            f"task path {kind!r}: module {module_path!r} is not in an installed app or "
            "AWA_TASK_MODULES, so it was not imported"
        )
    try:
        module = importlib.import_module(module_path)
    except ModuleNotFoundError as exc:
        missing = exc.name if isinstance(exc.name, str) else ""
        if missing and (module_path == missing or module_path.startswith(missing + ".")):
            raise TaskNotHere(f"task path {kind!r}: module {missing!r} does not exist here") from exc
        raise TaskNotRunnable(
            f"task path {kind!r}: importing {module_path!r} failed: {exception_text(exc)}"
        ) from exc
    except BaseException as exc:  # module-level code may raise anything, even SystemExit
        if isinstance(exc, KeyboardInterrupt) and may_be_ctrl_c():
            raise
        raise TaskNotRunnable(
            f"task path {kind!r}: importing {module_path!r} raised {type(exc).__name__}: {exception_text(exc)}"
        ) from exc
    task = getattr(module, name, None)
    if task is None:
        raise TaskNotRunnable(f"task path {kind!r}: module {module_path!r} has no attribute {name!r}")
    if not isinstance(task, Task):
        raise TaskNotRunnable(f"task path {kind!r} is a {type(task).__name__}, not a @task")
    return task


def may_be_ctrl_c() -> bool:
    """Whether a ``KeyboardInterrupt`` here may be a real Ctrl-C rather than raised by code.

    Python raises it for SIGINT only in the main thread, and only while its
    default handler is installed. ``runtasks`` installs its own (a Ctrl-C asks
    it to stop) and runs tasks in other threads: there, a module that raises
    ``KeyboardInterrupt`` while imported is broken like any other, and its job
    fails. In a shell it may be the user's Ctrl-C: it must interrupt, and not
    fail the job for good.
    """
    return (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )


def call_arguments(args: Any) -> tuple[list[Any], dict[str, Any]]:
    """The positional and keyword arguments stored in a row's ``args``.

    Raises :class:`TaskNotRunnable` unless it is ``{"args": [...], "kwargs": {...}}``
    (either key may be missing), naming the limit when a stored value could not
    be decoded (too large or too deep, see :mod:`awa_django.db.jsonb`).
    """
    if isinstance(args, Undecodable):
        raise TaskNotRunnable(f"job {args.column} cannot be read: it {args.reason}")
    if not isinstance(args, dict) or set(args) - {"args", "kwargs"}:
        raise TaskNotRunnable(f"job args must be an object with 'args' and 'kwargs', got {args!r:.200}")
    positional = args.get("args", [])
    keywords = args.get("kwargs", {})
    if not isinstance(positional, list):
        raise TaskNotRunnable(f"job args['args'] must be a list, got {type(positional).__name__}")
    if not isinstance(keywords, dict):
        raise TaskNotRunnable(f"job args['kwargs'] must be an object, got {type(keywords).__name__}")
    return list(positional), dict(keywords)


def resolve_task(kind: str) -> Task[Any, Any] | None:
    """The ``Task`` object at dotted path ``kind``, or None.

    Never imports a module outside the installed apps and ``AWA_TASK_MODULES``
    (see :func:`is_allowed_module`).
    """
    try:
        return load_task(kind)
    except (TaskNotHere, TaskNotRunnable):
        return None


def outside_problem(path: str) -> str | None:
    """Why the task path ``path`` may not be imported here, or None.

    The allow-list of :func:`load_task`, for a path given by an operator or
    read from data (a runtime schedule, an imported celery-beat row): checked
    on the dotted text, before anything is imported.
    """
    module = path.rpartition(".")[0]
    if is_allowed_module(module):
        return None
    return (
        f"{path!r}: module {module!r} is not in an installed app or AWA_TASK_MODULES, "
        "so it was not imported (runtasks would not run it)"
    )


def require_runnable_here(task: Task[Any, Any]) -> None:
    """Refuse to enqueue a task ``runtasks`` would never import."""
    module = task.module_path.rpartition(".")[0]
    if not is_allowed_module(module):
        raise InvalidTask(
            f"task {task.module_path!r}: its module is not in an installed app or AWA_TASK_MODULES, "
            "so runtasks would not import it"
        )
