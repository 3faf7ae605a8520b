from django.db import migrations

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    dependencies = [
        ('awa_django', '0012_job_batches'),
    ]

    operations = [
        run_sql_file("0013_complete_claim"),
    ]
