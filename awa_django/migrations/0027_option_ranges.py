"""Check constraints on awa_cron_jobs for the ranges every door validates
(awa_django.schedules.ranges): sql/0027_option_ranges.sql adds them without
checking stored rows, sql/0027_option_ranges_validate.sql then clears the
out-of-range values a hand-written row may hold (each named in a WARNING) and
checks the rows, in transactions of their own."""

from django.db import migrations, models

from ..db.lock_order import LockedSqlFile
from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    # Each statement in its own transaction: the brief lock of the first file is
    # not held while the second reads the table.
    atomic = False

    dependencies = [
        ('awa_django', '0026_payload_measure'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                # Its brief lock taken in the lock order, the wait bounded and retried.
                LockedSqlFile("0027_option_ranges", ["awa_cron_jobs"]),
                run_sql_file("0027_option_ranges_validate"),
            ],
            state_operations=[
                migrations.AddConstraint(
                    model_name='cronjob',
                    constraint=models.CheckConstraint(condition=models.Q(('starting_deadline__isnull', True), models.Q(('starting_deadline__gt', 0), ('starting_deadline__lte', 3162240000)), _connector='OR'), name='awa_cron_jobs_starting_deadline_range_check'),
                ),
                migrations.AddConstraint(
                    model_name='cronjob',
                    constraint=models.CheckConstraint(condition=models.Q(('jitter__gte', 0), ('jitter__lte', 3162240000)), name='awa_cron_jobs_jitter_range_check'),
                ),
            ],
        ),
    ]
