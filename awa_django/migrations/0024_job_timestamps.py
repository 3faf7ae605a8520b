"""A check on awa_jobs: an unfinished job holds only timestamps a Python
datetime can read back (no '-infinity', no year before 1 or after 9999).
sql/0024_job_timestamps.sql adds it without checking stored rows (a brief
lock), sql/0024_job_timestamps_fail.sql then fails the stored unfinished jobs
that break it (locking only those rows), and sql/0024_job_timestamps_validate.sql
checks the stored rows in a transaction of its own, which blocks no writer and
finds nothing to refuse."""

from django.db import migrations

from ..db.lock_order import LockedSqlFile
from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    # Each file in its own transaction: the brief lock of the check's addition
    # is not held while the other files read the table.
    atomic = False

    dependencies = [
        ('awa_django', '0023_job_bounds'),
    ]

    operations = [
        # Its brief lock taken in the lock order, the wait bounded and retried.
        LockedSqlFile("0024_job_timestamps", ["awa_jobs"]),
        run_sql_file("0024_job_timestamps_fail"),
        run_sql_file("0024_job_timestamps_validate"),
    ]
