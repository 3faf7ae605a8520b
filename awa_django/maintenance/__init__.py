"""The leader's maintenance: small services behind one protocol.

``service`` says what a service is (a name, an interval, ``run``) and runs a
list of them, each failure isolated; one module per service: ``prune``
(finished jobs past the retention), ``snapshots`` (runtime snapshots of
processes gone), ``reconcile`` (every owner's reconciliation),
``jobs_vacuum`` (the catch-up VACUUM of ``awa_jobs`` after a long
transaction), ``index_upkeep`` (rebuilding its bloated indexes) and
``slot_history`` (the trim of the slot history). ``vacuum`` keeps
``awa_cron_jobs`` small under heavy firing, counted after each batch of
fires rather than on an interval. Their statements live in the store.
"""

__all__ = [
    "index_upkeep",
    "jobs_vacuum",
    "prune",
    "reconcile",
    "service",
    "slot_history",
    "snapshots",
    "vacuum",
]
