"""Helpers shared by the test modules: plain functions, classes and constants.

Test modules and ``conftest.py`` files import from here; nothing here imports a
test module, and ``conftest.py`` files hold fixtures only (a fixture may call a
helper). Task code that job rows and settings name by dotted path stays where
it is named (``tests/testapp/``, ``tests/badapp/``, ``tests/outside_tasks.py``,
``tests/settings.py``, ...).

- ``database``: sessions on the test database (``raw_connection``,
  ``database_url``, ``operator_context``), its clock (``db_now``) and the
  leader lock's holder (``leader_pid``).
- ``waiting``: ``wait_for``, polling a condition with a deadline.
- ``processes``: ``manage()``/``manage_with()`` (a ``manage.py`` command run to
  completion), the ``Runcron``/``Runtasks`` subprocesses behind the fixtures,
  ``leader_process_pid`` and ``open_files``.
- ``servers``: real PgBouncer and private PostgreSQL clusters.
- ``tcpproxy``: a TCP proxy that can cut a connection to the database.
- ``reconcile``: simulated runtimes, raw evidence and locks for reconciliation.
- ``fires``: the SQL fire functions, prepared fires and what real processes fired.
- ``admin``: staff users and messages of the operators' console.
- ``health``: runtime rows for the health probe.
- ``metrics``: scraping and reading Prometheus samples.
- ``rows``: schedule rows as hand edits leave them, and the row checks' input.
- ``jobrows``: job rows holding timestamps no job can have, and a block without
  the check that refuses them.
- ``docs``: the runnable blocks of the documentation and the fresh project they run in.
"""
