"""Autodiscovered by awa_django: proves cron.py modules are imported at startup.

Yearly, so it never fires during a test run.
"""

from awa_django import periodic

from .tasks import record

periodic("testapp-yearly", "0 0 1 1 *", record, kwargs={"label": "yearly"})
