"""Install the SQL objects behind exactly-once fires (sql/0002_cron_core.sql)."""

from django.db import migrations

from ..db.lock_order import in_lock_order
from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("awa_django", "0001_initial")]

    operations = in_lock_order(
        ["awa_cron_jobs", "awa_jobs"],
        [run_sql_file("0002_cron_core")],
    )
