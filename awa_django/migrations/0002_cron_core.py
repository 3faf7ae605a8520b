"""Install the SQL objects behind exactly-once fires (sql/0002_cron_core.sql)."""

from django.db import migrations

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("awa_django", "0001_initial")]

    operations = [run_sql_file("0002_cron_core")]
