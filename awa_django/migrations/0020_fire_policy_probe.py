"""awa_cron_fire_v7: awa_cron_fire_v6's contract with the overlap check probed
per policy row instead of joined (sql/0020_fire_policy_probe.sql)."""

from django.db import migrations

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    dependencies = [
        ('awa_django', '0019_interval_schedules'),
    ]

    operations = [
        run_sql_file("0020_fire_policy_probe"),
    ]
