"""tests.settings plus tests.badapp, whose cron.py is invalid (subprocess tests only)."""

from tests.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.badapp"]  # noqa: F405
