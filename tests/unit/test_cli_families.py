"""``manage.py awa``'s verb families: every (group, verb) the parser accepts has
a handler in its family, and every handler is reachable from the parser."""

from __future__ import annotations

import argparse

from awa_django.cli import HANDLERS, celery_beat, cron, health, jobs, owners, queues, runtime
from awa_django.management.commands.awa import Command


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def parsed_verbs() -> set[tuple[str, str]]:
    found = set()
    for group, group_parser in subparsers(Command().create_parser("manage.py", "awa")).items():
        verbs = subparsers(group_parser)
        if verbs:
            found |= {(group, verb) for verb in verbs}
        else:  # a group that is its own verb (health, import-celery-beat)
            found.add((group, group_parser.get_default("verb")))
    return found


def test_cli__every_parsed_verb_has_a_handler_and_every_handler_a_verb() -> None:
    verbs = parsed_verbs()
    assert len(verbs) > 20
    assert verbs == set(HANDLERS)


def test_cli__the_families_name_each_verb_once() -> None:
    families = (celery_beat, cron, health, jobs, owners, queues, runtime)
    assert sum(len(f.HANDLERS) for f in families) == len(HANDLERS)
