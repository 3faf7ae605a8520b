"""A job's errors stay within the limits every reader decodes, and one bad row
never fails another's report or rescue: sql/0025_bounded_errors.sql installs
new versions of the fail, release and rescue functions (the previous versions
stay installed for workers not yet upgraded)."""

from django.db import migrations

from ..db.lock_order import in_lock_order
from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    dependencies = [
        ('awa_django', '0024_job_timestamps'),
    ]

    # It alters awa_jobs (the storage of errors): the preamble bounds and
    # retries the wait for its lock (awa_django.db.lock_order).
    operations = in_lock_order(["awa_jobs"], [run_sql_file("0025_bounded_errors")])
