"""Human-readable cron expressions ("At 09:00, Monday through Friday").

Shared by the admin and ``manage.py awa cron list|show``. The wording comes
from cron-descriptor; this module only feeds it our normalised fields.
"""

from __future__ import annotations

import logging

from cron_descriptor import ExpressionDescriptor, Options

from . import cronexpr

logger = logging.getLogger(__name__)


def _options() -> Options:
    options = Options()
    # Fixed English, 24-hour clock: the same text in the shell, the admin and docs.
    options.locale_code = "en_US"
    options.use_24hour_time_format = True
    options.day_of_week_start_index_zero = True
    return options


def describe_cron(expression: str) -> str:
    """A sentence describing ``expression`` (5 fields, 6 seconds-first, or a macro).

    cron-descriptor reads a 6-field expression as seconds-first only when it
    cannot be a year-last one, so it is always given the unambiguous 7-field
    form (seconds first, year ``*``) built from our parsed fields. An invalid
    expression is returned as it is.
    """
    try:
        parsed = cronexpr.parse_cron(expression)
    except cronexpr.CronError:
        return expression
    try:
        text: str = ExpressionDescriptor(" ".join((*parsed.fields, "*")), _options()).get_description()
    except Exception:  # cron-descriptor rejects a few shapes croniter accepts
        logger.debug("cannot describe %r", expression, extra={"event": "cron.describe_failed"})
        return parsed.describe()
    return text
