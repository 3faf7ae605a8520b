"""Drop awa_jobs_cron_name, a prefix of awa_jobs_cron_name_id
(sql/0021_drop_redundant_cron_name_index.sql), without blocking writers."""

from django.db import migrations

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    # DROP INDEX CONCURRENTLY cannot run inside a transaction block.
    atomic = False

    dependencies = [
        ('awa_django', '0020_fire_policy_probe'),
    ]

    operations = [
        run_sql_file("0021_drop_redundant_cron_name_index"),
    ]
