"""One definition of a schedule's options: every door takes exactly ``shape.OPTIONS``.

``AWA_SCHEDULES``' keys, the runtime API's ``**options`` and the CLI's
``--option`` keys derive from :data:`~awa_django.declarations.shape.OPTIONS`;
the explicit keyword parameters of ``periodic()``, ``build_schedule()`` and
``create_schedule()``, the CLI's dedicated flags and the admin form's fields
are written out (for IDEs and help texts) and checked here, each failure
naming the option present in one and missing in the other.
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from awa_django import cli
from awa_django.admin.schedule_forms import FORM_OPTIONS, OPTIONS_NOT_IN_FORM, RUNTIME_FIELDS
from awa_django.cli import runtime as cli_runtime
from awa_django.declarations import flow
from awa_django.declarations.builder import build_schedule
from awa_django.declarations.declaration import periodic
from awa_django.declarations.ranges import RANGES
from awa_django.declarations.runtime import row_options
from awa_django.declarations.shape import FIELDS, OPTIONS, SETTINGS_KEYS, option_differences
from awa_django.operations.runtime_schedules import create_schedule, update_schedule

# The parameters of each callable that are not schedule options.
NOT_OPTIONS: dict[Callable[..., Any], set[str]] = {
    periodic: {"name"},
    build_schedule: {"name", "source"},
    create_schedule: {"name", "actor", "using"},
}


def _parameters(function: Callable[..., Any]) -> tuple[list[str], bool]:
    """The named parameters of ``function`` that are options, and whether it takes ``**``."""
    parameters = inspect.signature(function).parameters.values()
    named = [
        p.name for p in parameters if p.kind is not p.VAR_KEYWORD and p.name not in NOT_OPTIONS[function]
    ]
    return named, any(p.kind is p.VAR_KEYWORD for p in parameters)


def test_options__are_the_definition_fields_then_the_flow_options() -> None:
    assert (*(o for f in FIELDS for o in f.settings), *flow.FLOW_OPTION_NAMES) == OPTIONS
    assert len(set(OPTIONS)) == len(OPTIONS) and frozenset(OPTIONS) == SETTINGS_KEYS


@pytest.mark.parametrize("function", [periodic, build_schedule], ids=lambda f: f.__name__)
def test_options__are_the_keyword_parameters_of(function: Callable[..., Any]) -> None:
    named, var_keyword = _parameters(function)
    assert option_differences(f"{function.__name__}()'s parameters", named) == []
    assert not var_keyword, f"{function.__name__}() must name every option (no **options)"


def test_options__create_schedule_names_some_and_takes_the_rest() -> None:
    """Its named parameters are options; the others come through ``**options``,
    which build_runtime_schedule holds to SETTINGS_KEYS (derived)."""
    named, var_keyword = _parameters(create_schedule)
    assert option_differences("create_schedule()'s parameters", named, partial=True) == []
    assert var_keyword
    assert any(p.kind is p.VAR_KEYWORD for p in inspect.signature(update_schedule).parameters.values())


def test_options__cli_flags_and_option_keys() -> None:
    """Each dedicated flag of ``awa cron create|edit`` sets an option; every other
    option is given with ``--option KEY=VALUE``, whose keys are SETTINGS_KEYS."""
    assert (
        option_differences("awa cron create's flags", cli_runtime.RUNTIME_FLAGS.values(), partial=True) == []
    )
    for option in OPTIONS:
        assert cli_runtime.option_pair(f"{option}=1") == (option, 1)
    with pytest.raises(Exception, match="not a schedule option"):
        cli_runtime.option_pair("name=x")


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    (verbs,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = verbs.choices[name]
    return found


@pytest.mark.parametrize("verb", ["create", "edit"])
def test_options__cli_flags_are_the_runtime_flags_and_say_the_ranges(verb: str) -> None:
    """Each flag of ``awa cron create|edit`` is read by runtime_options (RUNTIME_FLAGS);
    a number flag's help states the range of schedules.ranges (the contract's)."""
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    actions = {a.dest: a for a in _subparser(_subparser(parser, "cron"), verb)._actions}
    flags = set(actions) - {"help", "name", "actor", "option", "json"}
    assert flags == set(cli_runtime.RUNTIME_FLAGS), flags ^ set(cli_runtime.RUNTIME_FLAGS)
    for option in ("priority", "max_attempts", "every"):
        bounds = RANGES[option]
        assert f"{bounds.low} to {bounds.high}" in str(actions[option].help), option


def test_options__admin_form_edits_or_keeps_each_option() -> None:
    assert list(FORM_OPTIONS) == RUNTIME_FIELDS
    shown = set(FORM_OPTIONS.values())
    assert not shown & OPTIONS_NOT_IN_FORM, "an option is both in the form and listed as not in it"
    assert (
        option_differences("the admin form (FORM_OPTIONS | OPTIONS_NOT_IN_FORM)", shown | OPTIONS_NOT_IN_FORM)
        == []
    )


def test_options__a_stored_row_gives_back_every_option() -> None:
    """runtime.row_options (what an edit starts from) derives from FIELDS and the flow options."""
    columns = {f.key: f"<{f.key}>" for f in FIELDS}
    columns["args"] = {"args": [], "kwargs": {}}
    columns["tags"] = []
    columns["metadata"] = {flow.FLOW_METADATA_KEY: {o: 1 for o in flow.FLOW_OPTION_NAMES}}
    assert option_differences("runtime.row_options()", row_options(columns)) == []


def test_option_differences__names_the_option_in_one_and_not_the_other() -> None:
    named = [o for o in OPTIONS if o != "jitter"] + ["jiter"]
    assert option_differences("periodic()", named) == [
        "option 'jitter' (shape.OPTIONS) is missing from periodic()",
        "periodic() takes 'jiter', which is not a schedule option (shape.OPTIONS)",
    ]
    assert option_differences("the CLI", ["jiter"], partial=True) == [
        "the CLI takes 'jiter', which is not a schedule option (shape.OPTIONS)"
    ]
