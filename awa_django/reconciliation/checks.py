"""System checks of authoritative mode: its owner and revision (E040, E041).

Registered with the others by :mod:`awa_django.checks`.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error

from ..conf import conf
from ..declarations.runtime import RUNTIME_OWNER, is_reserved_owner
from ..validation import validate_label

__all__ = ["check_reconciliation"]


def check_reconciliation(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Authoritative mode has a valid owner and revision."""
    if conf.AUTHORITATIVE is not True:
        return []  # a non-bool is reported by check_setting_limits (E042)
    messages: list[CheckMessage] = []
    for key, value, check_id, hint in (
        (
            "AWA_OWNER",
            conf.OWNER,
            "awa_django.E040",
            "Authoritative mode needs AWA_OWNER: 1-200 bytes, not blank, no NUL.",
        ),
        (
            "AWA_REVISION",
            conf.REVISION,
            "awa_django.E041",
            "Authoritative mode needs AWA_REVISION (a deploy label, e.g. a git SHA).",
        ),
    ):
        try:
            validate_label(value, key)
        except ValueError as exc:
            messages.append(Error(str(exc)[:200], hint=hint, id=check_id))
    if is_reserved_owner(conf.OWNER):
        messages.append(
            Error(
                f"AWA_OWNER {RUNTIME_OWNER!r} is reserved for runtime schedules",
                hint="Choose another owner id for this deployment, such as 'billing'.",
                id="awa_django.E040",
            )
        )
    return messages
