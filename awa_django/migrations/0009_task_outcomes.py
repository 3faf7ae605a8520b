from django.db import migrations, models

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    dependencies = [
        ('awa_django', '0008_parked_rows'),
    ]

    operations = [
        migrations.AddField(
            model_name='job',
            name='started_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        # The constraint's SQL lives in the SQL file (NOT VALID + VALIDATE);
        # the state operation tells Django's model about it.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddConstraint(
                    model_name='job',
                    constraint=models.CheckConstraint(
                        condition=models.Q(('priority__gte', -100), ('priority__lte', 100)),
                        name='awa_jobs_priority_check',
                    ),
                ),
            ],
            database_operations=[run_sql_file("0009_task_outcomes")],
        ),
    ]
