"""Named queries: the ``.sql`` files of ``store/sql/`` read once, looked up by name.

A file holds one or more queries, each starting at a header line
``-- name: <query_name>`` and running to the next header or the end of the
file. Comment lines right after the header say what the query does; they stay
in the text sent to PostgreSQL (``pg_stat_statements`` shows them). Names are
unique across every file: a duplicate, an empty query or text before the first
header is an error when the files are read, naming the file and the query.

A part several statements share (a long select list) is written once, as a
fragment headed ``-- fragment: <name>``, and a query includes it where it
writes ``/*@<name>*/``: the loader puts the fragment's text (its comments
dropped) in place of the marker, so no statement is copied. A marker naming no
fragment is an error. Fragments are not queries: :func:`query` never returns one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SQL_DIR = Path(__file__).resolve().parent / "sql"
HEADER = re.compile(r"^--\s*(?P<kind>name|fragment):\s*(?P<name>[a-z][a-z0-9_]*)\s*$", re.MULTILINE)
INCLUDE = re.compile(r"/\*@(?P<name>[a-z][a-z0-9_]*)\*/")


class QueryFileError(ValueError):
    """A query file that cannot be read into named queries."""


@dataclass(frozen=True)
class Query:
    """One named statement: where it comes from and its text."""

    name: str
    family: str
    path: Path
    sql: str
    fragment: bool = False


def parse_file(path: Path, family: str) -> list[Query]:
    """Every named query of one ``.sql`` file, in file order."""
    text = path.read_text(encoding="utf-8")
    headers = list(HEADER.finditer(text))
    before = text[: headers[0].start()] if headers else text
    if any(line.strip() and not line.lstrip().startswith("--") for line in before.splitlines()):
        raise QueryFileError(f"{path}: SQL before the first '-- name:' header")
    found = []
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        body = text[header.end() : end].strip()
        statement = "\n".join(
            line for line in body.splitlines() if not line.lstrip().startswith("--")
        ).strip()
        if not statement:
            raise QueryFileError(f"{path}: query {header['name']!r} is empty")
        is_fragment = header["kind"] == "fragment"
        sql = (statement if is_fragment else body).rstrip(";").rstrip()
        found.append(Query(header["name"], family, path, sql, is_fragment))
    return found


@cache
def all_queries() -> dict[str, Query]:
    """Every query of every file under ``store/sql/``, by name, fragments included."""
    queries: dict[str, Query] = {}
    fragments: dict[str, Query] = {}
    for path in sorted(SQL_DIR.rglob("*.sql")):
        family = path.relative_to(SQL_DIR).parts[0]
        for found in parse_file(path, family):
            if found.name in queries or found.name in fragments:
                first = (queries.get(found.name) or fragments[found.name]).path
                raise QueryFileError(f"query {found.name!r} is defined in {first} and in {path}")
            (fragments if found.fragment else queries)[found.name] = found
    return {name: with_fragments(q, fragments) for name, q in queries.items()}


def with_fragments(found: Query, fragments: dict[str, Query]) -> Query:
    """``found`` with each ``/*@fragment*/`` marker replaced by the fragment's text."""

    def text_of(match: re.Match[str]) -> str:
        fragment = fragments.get(match["name"])
        if fragment is None:
            raise QueryFileError(
                f"{found.path}: query {found.name!r} includes no such fragment {match['name']!r}"
            )
        return fragment.sql

    return Query(found.name, found.family, found.path, INCLUDE.sub(text_of, found.sql))


def query(name: str) -> str:
    """The text of the named query (a ``KeyError`` naming it when there is none)."""
    try:
        return all_queries()[name].sql
    except KeyError:
        raise KeyError(f"no store query named {name!r}") from None
