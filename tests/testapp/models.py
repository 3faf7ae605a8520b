"""Rows test tasks write, so tests can observe that a task really ran."""

from django.db import models


class Effect(models.Model):
    label = models.TextField()
    phase = models.TextField(default="done")  # "started" / "done"
    job_id = models.BigIntegerField(null=True)
    attempt = models.IntegerField(null=True)
    schedule = models.TextField(null=True)
    fire_at = models.DateTimeField(null=True)
    pid = models.IntegerField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "testapp"
