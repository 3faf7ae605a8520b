"""Schedules of the demo app, autodiscovered by awa_django at startup."""

from awa_django import periodic

from .tasks import heartbeat

# Every 5 seconds (6 fields: seconds first), so the demo shows fires quickly.
periodic("demo-heartbeat", "*/5 * * * * *", heartbeat, kwargs={"message": "hello from cron"})
