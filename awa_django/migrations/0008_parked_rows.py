"""Parked schedule rows: ``parked_at``/``parked_reason`` on ``awa_cron_jobs``, the
fence that lets the leader write them on owned rows, and awa_cron_fire_v3
(sql/0008_parked_rows.sql)."""

from django.db import migrations, models

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("awa_django", "0007_release_and_prune_index")]

    operations = [
        migrations.AddField(
            model_name="cronjob",
            name="parked_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name="cronjob",
            name="parked_reason",
            field=models.TextField(blank=True, editable=False, null=True),
        ),
        run_sql_file("0008_parked_rows"),
    ]
