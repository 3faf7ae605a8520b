"""Measures of a schedule's payload kept on its row (args_bytes, args_depth,
metadata_bytes, metadata_depth, by a trigger), flow-control keys hashed past
their limit instead of cut, and awa_cron_fire_v8, which records a slot a
unique key refused (sql/0026_payload_measure.sql). The widened history checks
are validated, and the stored rows measured, each in a transaction of its own."""

from django.db import migrations

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):

    # Each file is a transaction of its own (BEGIN ... COMMIT in the first and
    # the last): the locks of the first are not held while rows are validated
    # or measured.
    atomic = False

    dependencies = [
        ("awa_django", "0025_bounded_errors"),
    ]

    operations = [
        run_sql_file("0026_payload_measure"),
        run_sql_file("0026_payload_measure_validate"),
        run_sql_file("0026_payload_measure_backfill"),
    ]
