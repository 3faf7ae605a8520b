"""Declarations cascade with their runtime snapshot, in the database
(sql/0005_declaration_cascade.sql).

(The file keeps the name under which an early build shipped it, so databases that
applied it keep a consistent history.)"""

from django.db import migrations

from ..db.lock_order import in_lock_order
from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("awa_django", "0004_reconciliation")]

    operations = in_lock_order(
        ["awa_runtime_instances", "awa_cron_declarations"],
        [run_sql_file("0005_declaration_cascade")],
    )
