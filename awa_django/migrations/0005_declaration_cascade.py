"""Declarations cascade with their runtime snapshot, in the database
(sql/0005_declaration_cascade.sql)."""

from django.db import migrations

from awa_django.sqlfiles import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("awa_django", "0004_reconciliation")]

    operations = [run_sql_file("0005_declaration_cascade")]
