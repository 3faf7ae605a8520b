from django.db import migrations

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    dependencies = [
        ('awa_django', '0015_hostile_rows'),
    ]

    operations = [
        run_sql_file("0016_fire_job_metadata"),
    ]
