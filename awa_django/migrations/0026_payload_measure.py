"""Measures of a schedule's payload kept on its row (args_bytes, args_depth,
metadata_bytes, metadata_depth, by a trigger), flow-control keys hashed past
their limit instead of cut, and awa_cron_fire_v8, which records a slot a
unique key refused (sql/0026_payload_measure.sql). The stored rows are
measured, and the widened history checks validated, by 0028_payload_measure_checks."""

from django.db import migrations

from ..db.lock_order import in_lock_order
from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):
    dependencies = [
        ("awa_django", "0025_bounded_errors"),
    ]

    # It alters awa_cron_jobs (columns, triggers), awa_jobs (its flow-key
    # trigger) and the checks of both slot tables: the lock order first
    # (awa_django.db.lock_order), the order in which a fire takes them.
    operations = in_lock_order(
        ["awa_cron_jobs", "awa_jobs", "awa_cron_slot_outcomes", "awa_cron_slot_counts"],
        [run_sql_file("0026_payload_measure")],
    )
