from django.db import migrations

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    dependencies = [
        ('awa_django', '0011_runtime_progress'),
    ]

    operations = [
        run_sql_file("0012_job_batches"),
    ]
