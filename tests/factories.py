"""factory-boy factories for awa_django rows."""

from __future__ import annotations

import factory

from awa_django.models import CronJob, Job


class CronJobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CronJob

    name = factory.Sequence(lambda n: f"schedule-{n}")
    cron_expr = "* * * * *"
    timezone = "UTC"
    kind = "tests.testapp.tasks.record"
    queue = "default"
    args = factory.LazyFunction(lambda: {"args": [], "kwargs": {}})
    priority = 0
    max_attempts = 3
    missed_fire_policy = "coalesce"


class JobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Job

    kind = "tests.testapp.tasks.record"
    queue = "default"
    args = factory.LazyFunction(lambda: {"args": [], "kwargs": {}})
