"""``manage.py awa``: operate awa_django from the shell.

One module per verb family, each holding its parsers beside its handlers:
:mod:`.cron` (the ``cron`` group: list, show, history, pause, resume,
trigger, remove), :mod:`.runtime` (``cron create|edit|delete``),
:mod:`.owners` (``cron adopt|retire|restore|...|plan|owners``),
:mod:`.queues`, :mod:`.jobs`, :mod:`.health` and :mod:`.celery_beat`
(``import-celery-beat``). :mod:`.arguments` holds the argparse types they
share, :mod:`.output` how they write. The handlers call the same operator
verbs as the admin (:mod:`awa_django.operations`);
:mod:`awa_django.management.commands.awa` builds the parser with
:func:`add_arguments` and runs :func:`handler_for` the parsed group and verb.
"""

from __future__ import annotations

from typing import Any

from . import celery_beat, cron, health, jobs, owners, queues, runtime
from .output import Handler

__all__ = [
    "HANDLERS",
    "add_arguments",
    "arguments",
    "celery_beat",
    "cron",
    "handler_for",
    "health",
    "jobs",
    "output",
    "owners",
    "queues",
    "runtime",
]

# (group, verb) -> its handler, over every family.
HANDLERS: dict[tuple[str, str], Handler] = {
    **cron.HANDLERS,
    **runtime.HANDLERS,
    **owners.HANDLERS,
    **queues.HANDLERS,
    **jobs.HANDLERS,
    **health.HANDLERS,
    **celery_beat.HANDLERS,
}


def add_arguments(parser: Any) -> None:
    """Every group and verb of ``manage.py awa``."""
    groups = parser.add_subparsers(
        dest="group", required=True, metavar="{cron,queue,jobs,health,import-celery-beat}"
    )
    cron.add_parser(groups)
    queues.add_parser(groups)
    jobs.add_parser(groups)
    health.add_parser(groups)
    celery_beat.add_parser(groups)


def handler_for(options: dict[str, Any]) -> Handler:
    """The handler of the parsed ``group`` and ``verb``."""
    return HANDLERS[(options["group"], options["verb"])]
