"""Execution policies: overlap, starting_deadline and jitter on ``awa_cron_jobs``,
the slot accounting tables, the fence v3 and awa_cron_fire_v5
(sql/0018_execution_policies.sql)."""

from django.db import migrations, models

from ..db.lock_order import in_lock_order
from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    dependencies = [
        ('awa_django', '0017_flow_control'),
    ]

    # It alters awa_cron_jobs, awa_runtime_instances and awa_jobs (and, backwards,
    # drops the slot tables): the lock order first (awa_django.db.lock_order).
    operations = in_lock_order(
        ["awa_runtime_instances", "awa_cron_jobs", "awa_jobs", "awa_cron_slot_outcomes", "awa_cron_slot_counts"],
        [
        migrations.AddField(
            model_name='cronjob',
            name='jitter',
            field=models.FloatField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name='cronjob',
            name='overlap',
            field=models.TextField(choices=[('allow', 'Allow (runs may overlap)'), ('skip', 'Skip (no slot while a job is unfinished)'), ('buffer_one', 'Buffer one (one runs, at most one waits)')], db_default='allow', default='allow'),
        ),
        migrations.AddField(
            model_name='cronjob',
            name='starting_deadline',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name='cronjob',
            constraint=models.CheckConstraint(condition=models.Q(('overlap__in', ['allow', 'skip', 'buffer_one'])), name='awa_cron_jobs_overlap_check'),
        ),
        migrations.AddConstraint(
            model_name='cronjob',
            constraint=models.CheckConstraint(condition=models.Q(('starting_deadline__isnull', True), ('starting_deadline__gt', 0), _connector='OR'), name='awa_cron_jobs_starting_deadline_check'),
        ),
        migrations.AddConstraint(
            model_name='cronjob',
            constraint=models.CheckConstraint(condition=models.Q(('jitter__gte', 0)), name='awa_cron_jobs_jitter_check'),
        ),
        migrations.AddField(
            model_name='runtimeinstance',
            name='cron_fire_version',
            field=models.IntegerField(blank=True, null=True),
        ),
        run_sql_file("0018_execution_policies"),
        ],
    )
