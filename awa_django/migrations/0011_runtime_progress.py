from django.db import migrations, models

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    dependencies = [
        ('awa_django', '0010_admin'),
    ]

    operations = [
        # The column is created by the SQL file; Django only records it.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name='runtimeinstance',
                    name='last_pass_at',
                    field=models.DateTimeField(blank=True, null=True),
                ),
            ],
        ),
        run_sql_file("0011_runtime_progress"),
    ]
