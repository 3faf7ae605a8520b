"""Drop the text_pattern_ops indexes of awa_cron_jobs that no query uses
(sql/0022_drop_cron_jobs_name_pattern_index.sql and
sql/0022_drop_cron_jobs_owner_pattern_index.sql, one statement each: a
CONCURRENTLY statement must run alone), without blocking writers."""

from django.db import migrations

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    # DROP INDEX CONCURRENTLY cannot run inside a transaction block.
    atomic = False

    dependencies = [
        ('awa_django', '0021_drop_redundant_cron_name_index'),
    ]

    operations = [
        run_sql_file("0022_drop_cron_jobs_name_pattern_index"),
        run_sql_file("0022_drop_cron_jobs_owner_pattern_index"),
    ]
