"""Interval schedules: ``every_seconds`` and ``anchor`` on ``awa_cron_jobs``,
``cron_expr`` nullable (exactly one of the two timings is set), the
invalidation trigger v2 and awa_cron_fire_v6 (sql/0019_interval_schedules.sql)."""

from django.db import migrations, models

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    dependencies = [
        ('awa_django', '0018_execution_policies'),
    ]

    operations = [
        migrations.AlterField(
            model_name='cronjob',
            name='cron_expr',
            field=models.TextField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='cronjob',
            name='every_seconds',
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='cronjob',
            name='anchor',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name='cronjob',
            constraint=models.CheckConstraint(condition=models.Q(('cron_expr__isnull', True), ('every_seconds__isnull', False)) | models.Q(('cron_expr__isnull', False), ('every_seconds__isnull', True)), name='awa_cron_jobs_timing_check'),
        ),
        migrations.AddConstraint(
            model_name='cronjob',
            constraint=models.CheckConstraint(condition=models.Q(('every_seconds__isnull', True)) | models.Q(('every_seconds__gte', 1)), name='awa_cron_jobs_every_seconds_check'),
        ),
        migrations.AddConstraint(
            model_name='cronjob',
            constraint=models.CheckConstraint(condition=models.Q(('anchor__isnull', True)) | models.Q(('every_seconds__isnull', False)), name='awa_cron_jobs_anchor_check'),
        ),
        run_sql_file("0019_interval_schedules"),
    ]
