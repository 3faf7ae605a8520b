"""Install awa_cron_fire_v2 (sql/0006_fire_in_name_order.sql)."""

from django.db import migrations

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("awa_django", "0005_declaration_db_cascade")]

    operations = [run_sql_file("0006_fire_in_name_order")]
