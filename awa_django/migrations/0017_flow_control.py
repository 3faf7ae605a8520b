from django.db import migrations, models

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    dependencies = [
        ('awa_django', '0016_fire_job_metadata'),
    ]

    # The columns and indexes are created by the SQL file; the state
    # operations tell Django's model about them.
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name='job',
                    name='unique_key',
                    field=models.TextField(blank=True, null=True),
                ),
                migrations.AddField(
                    model_name='job',
                    name='concurrency_key',
                    field=models.TextField(blank=True, null=True),
                ),
                migrations.AddField(
                    model_name='job',
                    name='concurrency_limit',
                    field=models.IntegerField(blank=True, null=True),
                ),
                migrations.AddIndex(
                    model_name='job',
                    index=models.Index(condition=models.Q(('concurrency_key__isnull', False), ('state', 'running')), fields=['concurrency_key'], name='awa_jobs_concurrency_running'),
                ),
                migrations.AddIndex(
                    model_name='job',
                    index=models.Index(condition=models.Q(('attempted_at__isnull', False)), fields=['queue', 'attempted_at'], name='awa_jobs_queue_attempted'),
                ),
                migrations.AddConstraint(
                    model_name='job',
                    constraint=models.UniqueConstraint(condition=models.Q(('state__in', ['available', 'scheduled', 'running', 'retryable']), ('unique_key__isnull', False)), fields=('unique_key',), name='awa_jobs_unique_key'),
                ),
            ],
            database_operations=[run_sql_file("0017_flow_control")],
        ),
    ]
