"""An invalid declaration: the quick start's hour typo (importing this module raises InvalidSchedule)."""

from awa_django import periodic

periodic("broken", "0 25 * * 1-5", "tests.testapp.tasks.record")
