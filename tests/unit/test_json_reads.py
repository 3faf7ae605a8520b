"""Every JSON column of every ``awa_*`` table is read through the guarded decoder.

Stored JSON comes from raw SQL as well as from awa_django: a value nested
thousands of levels deep makes ``json.loads`` (and Django's ``JSONField``,
which calls it) overflow the interpreter's stack. The rules, checked on the
source of ``awa_django`` (migrations excepted):

1. A model field holding JSON is a ``GuardedJSONField`` (``awa_django.db.jsonb``):
   no ``JSONField(...)`` is declared anywhere else, and every JSON field of
   every awa_django model is guarded.
2. Only ``awa_django.db.jsonb`` decodes JSON text (``json.loads``, ``json.load``,
   ``JSONDecoder``, ``raw_decode``). Elsewhere a call is allowed only in the
   functions of :data:`NOT_A_COLUMN`, each with what it decodes: text that was
   never read from a column (a command-line argument, a round trip of a value
   just encoded in Python).
3. No SQL in the package makes PostgreSQL hand back the ``json`` type
   (``::json``, ``to_json``, ``row_to_json``, ``json_agg``, ``json_build_*``):
   psycopg decodes it itself, unbounded. Read jsonb as text (Django's connections
   do) and decode it with ``jsonb.decode``.
4. A psycopg connection of awa_django's own (not Django's) is opened only by
   ``db.sessions.dedicated_connection``, which makes it hand back json and jsonb as
   text too, or by the modules of :data:`RAW_CONNECTIONS`, which read no table.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.apps import apps
from django.db import models

from awa_django.db.jsonb import GuardedJSONField

PACKAGE = Path(__file__).resolve().parents[2] / "awa_django"
DECODER = PACKAGE / "db" / "jsonb.py"
RULE_2 = (
    "decode stored JSON with awa_django.db.jsonb.decode (bounded size and depth), or declare "
    "the model field as GuardedJSONField; json.loads is only for text that is not a column "
    "value: add the function to NOT_A_COLUMN with what it decodes"
)

# (module path, function) -> the text it decodes, which no column holds.
NOT_A_COLUMN = {
    ("cli/runtime.py", "json_value"): "a --args/--kwargs command-line argument (catches RecursionError)",
    ("cli/runtime.py", "option_pair"): "a --option KEY=VALUE command-line argument (catches RecursionError)",
    ("admin/schedule_forms.py", "_decoded"): "an admin form's args/kwargs text (catches RecursionError)",
    ("declarations/builder.py", "_json"): "a round trip of json.dumps of a declared value",
    ("operations/runtime_schedules.py", "_stored"): "a round trip of json.dumps of a value just built",
    ("client/payloads.py", "payload_problem"): "a round trip of json.dumps output, depth checked first",
    ("reconciliation/manifest.py", "build_manifest"): "a round trip of canonical_json of a declared entry",
}

# Modules opening psycopg connections that read no table (server probes, PgBouncer's console).
RAW_CONNECTIONS = {"db/sessions.py", "db/aliases.py", "checks/database.py"}

DECODING_CALLS = {"loads", "load", "JSONDecoder", "raw_decode"}
JSON_SQL = re.compile(
    r"::\s*json\b|\b(to_json|row_to_json|json_agg|json_object_agg|json_build_\w+)\s*\(", re.I
)


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts)


def _enclosing_functions(tree: ast.AST) -> dict[ast.AST, str]:
    """Each node of ``tree`` mapped to the name of the innermost function holding it."""
    owner: dict[ast.AST, str] = {}

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            owner[child] = name
            visit(child, name)

    visit(tree, "<module>")
    return owner


def _called_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _json_names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """Names bound to the json module (``import json as j``) and to what it
    exports (``from json import loads as parse``)."""
    modules, members = {"json"}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "json"}
        elif isinstance(node, ast.ImportFrom) and node.module == "json":
            members |= {a.asname or a.name for a in node.names if a.name in DECODING_CALLS}
    return modules, members


def _decodes(node: ast.Call, modules: set[str], members: set[str]) -> bool:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in members
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in ("JSONDecoder", "raw_decode"):
        return True
    return func.attr in DECODING_CALLS and isinstance(func.value, ast.Name) and func.value.id in modules


def plain_decodes(path: Path, package: Path = PACKAGE) -> list[str]:
    """Rule 2: calls decoding JSON outside the decoder and :data:`NOT_A_COLUMN`."""
    tree = ast.parse(path.read_text())
    owner = _enclosing_functions(tree)
    modules, members = _json_names(tree)
    relative = path.relative_to(package).as_posix()
    return [
        f"{relative}:{node.lineno} in {owner[node]}()"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and _decodes(node, modules, members)
        and (relative, owner[node]) not in NOT_A_COLUMN
    ]


def plain_json_fields(path: Path) -> list[str]:
    """Rule 1: ``JSONField(...)`` declared outside the decoder module."""
    tree = ast.parse(path.read_text())
    return [
        f"{path.name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _called_name(node) == "JSONField"
    ]


def json_typed_sql(path: Path) -> list[str]:
    """Rule 3: string literals (SQL) that make PostgreSQL return the ``json`` type."""
    tree = ast.parse(path.read_text())
    return [
        f"{path.name}:{node.lineno}: {match.group(0)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        for match in [JSON_SQL.search(node.value)]
        if match
    ]


def test_the_rules_have_sources_to_check() -> None:
    assert len(_sources()) > 50 and DECODER in _sources()


@pytest.mark.parametrize(
    "path", [p for p in _sources() if p != DECODER], ids=lambda p: p.relative_to(PACKAGE).as_posix()
)
def test_json_columns__are_decoded_only_by_the_guarded_decoder(path: Path) -> None:
    found = plain_decodes(path)
    assert not found, f"{', '.join(found)}: {RULE_2}"
    fields = plain_json_fields(path)
    assert not fields, (
        f"{', '.join(fields)}: declare JSON model fields as awa_django.db.jsonb.GuardedJSONField"
    )
    sql = json_typed_sql(path)
    assert not sql, f"{', '.join(sql)}: PostgreSQL's json type is decoded by psycopg, unbounded; {RULE_2}"


def test_raw_connections__are_opened_only_where_json_comes_back_as_text() -> None:
    opened = {
        path.relative_to(PACKAGE).as_posix()
        for path in _sources()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and _called_name(node) == "connect"
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "psycopg"
    }
    assert opened <= RAW_CONNECTIONS, (
        f"{sorted(opened - RAW_CONNECTIONS)}: open awa_django's own connections with "
        "db.sessions.dedicated_connection (json and jsonb come back as text, decoded by db.jsonb)"
    )


def test_json_columns__every_json_model_field_is_guarded() -> None:
    fields = [
        f"{model.__name__}.{field.name}"
        for model in apps.get_app_config("awa_django").get_models()
        for field in model._meta.get_fields()
        if isinstance(field, models.JSONField) and not isinstance(field, GuardedJSONField)
    ]
    assert not fields, f"{fields}: declare them as awa_django.db.jsonb.GuardedJSONField"
    guarded = {
        (model._meta.db_table, field.name)
        for model in apps.get_app_config("awa_django").get_models()
        for field in model._meta.get_fields()
        if isinstance(field, GuardedJSONField)
    }
    assert {("awa_cron_manifests", "manifest"), ("awa_runtime_instances", "queues")} <= guarded


def test_json_columns__every_allowed_decode_still_exists() -> None:
    # An entry whose function is gone would silently allow a new one of that name.
    present = {
        (path.relative_to(PACKAGE).as_posix(), node.name)
        for path in _sources()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef)
    }
    assert set(NOT_A_COLUMN) <= present, set(NOT_A_COLUMN) - present


def test_the_rules_see_a_plain_read_of_a_json_column(tmp_path: Path) -> None:
    module = tmp_path / "rows.py"
    module.write_text(
        "import json\n"
        "from json import loads as parse\n"
        "from django.db import models\n"
        "SQL = 'SELECT manifest::json FROM awa_cron_manifests'\n"
        "class Row(models.Model):\n"
        "    queues = models.JSONField()\n"
        "def read(cursor):\n"
        "    cursor.execute('SELECT manifest::text FROM awa_cron_manifests')\n"
        "    return json.loads(cursor.fetchone()[0]), parse('[]')\n"
    )
    assert plain_decodes(module, tmp_path) == ["rows.py:9 in read()", "rows.py:9 in read()"]
    assert plain_json_fields(module) == ["rows.py:6"]
    assert json_typed_sql(module) == ["rows.py:4: ::json"]
