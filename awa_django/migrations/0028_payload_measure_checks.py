"""What 0026_payload_measure leaves for the rows already stored: the widened
checks of the two slot tables validated, and the stored schedules measured
(sql/0028_payload_measure_*.sql), each in a transaction of its own that holds
one table, so no writer waits on the scans."""

from django.db import migrations

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):
    # Each file in its own transaction: one table at a time, never a lock held
    # while another table is scanned.
    atomic = False

    dependencies = [
        ("awa_django", "0027_option_ranges"),
    ]

    operations = [
        run_sql_file("0028_payload_measure_outcomes"),
        run_sql_file("0028_payload_measure_counts"),
        run_sql_file("0028_payload_measure_backfill"),
    ]
