"""Text safe to print on an operator's terminal.

Values shown by ``manage.py awa`` (schedule and owner names, hostnames,
error text) come from the database, where raw SQL or a hostile declaration
may have put control characters. Shared by the command and :mod:`.health`,
which must not import the command's modules (the runtime imports it).
"""

from __future__ import annotations

import unicodedata
from typing import Any

# Control, format (bidi overrides), surrogate, line/paragraph separator,
# private-use and unassigned characters.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Co", "Cn"})


def printable(value: Any) -> str:
    """``value`` as text with control and format characters escaped.

    Names come from declarations and raw SQL; ESC, newlines or RTL overrides
    printed as-is would let one row forge others in a terminal. JSON output
    is escaped by ``json.dumps`` itself.
    """
    text = str(value)
    if all(" " <= c <= "~" for c in text):
        return text
    return "".join(
        c if unicodedata.category(c) not in _UNPRINTABLE else c.encode("unicode_escape").decode("ascii")
        for c in text
    )


def printable_lines(value: Any) -> str:
    """:func:`printable` line by line: the line breaks stay (a traceback keeps
    its shape in a ``<pre>``), every other control character is written out."""
    return "\n".join(printable(line) for line in str(value).split("\n"))
