"""An invalid declaration: importing this module must raise InvalidSchedule."""

from awa_django import periodic

periodic("broken", "bad expr", "tests.testapp.tasks.record")
