from django.db import migrations, models

from awa_django.sqlfiles import read_sql


class Migration(migrations.Migration):

    dependencies = [
        ('awa_django', '0007_release_and_prune_index'),
    ]

    operations = [
        migrations.RunSQL(
            sql=read_sql("0011_runtime_progress"),
            reverse_sql=read_sql("0011_runtime_progress.reverse"),
            state_operations=[
                migrations.AddField(
                    model_name='runtimeinstance',
                    name='last_pass_at',
                    field=models.DateTimeField(blank=True, null=True),
                ),
            ],
        ),
    ]
