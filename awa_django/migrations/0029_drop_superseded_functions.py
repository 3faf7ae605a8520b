"""The superseded SQL function versions older than their family's previous one
are dropped (sql/0029_drop_superseded_functions.sql): the current and the
previous version of each family stay installed, so processes of the previous
release still find the functions they call mid-upgrade
(docs/explanation/sql-versions.md). Dropping a function takes no table lock,
so no lock-order preamble."""

from django.db import migrations

from ..db.sqlfiles import run_sql_file


class Migration(migrations.Migration):
    dependencies = [
        ("awa_django", "0028_payload_measure_checks"),
    ]

    operations = [
        run_sql_file("0029_drop_superseded_functions"),
    ]
