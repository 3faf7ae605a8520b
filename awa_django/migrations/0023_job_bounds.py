"""Check constraints on awa_jobs for what enqueue validates (queue and key
lengths, the concurrency limit): sql/0023_job_bounds.sql adds them without
checking stored rows, sql/0023_job_bounds_validate.sql then checks those in a
transaction of its own, which blocks no writer."""

from django.db import migrations

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    # Each file in its own transaction: the brief lock of the first is not held
    # while the second reads the table.
    atomic = False

    dependencies = [
        ('awa_django', '0022_drop_cron_jobs_pattern_indexes'),
    ]

    operations = [
        run_sql_file("0023_job_bounds"),
        run_sql_file("0023_job_bounds_validate"),
    ]
