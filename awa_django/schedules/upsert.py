"""The upsert of schedule definitions, as the schedules' writers call it.

The statements live in the store (:mod:`awa_django.store.schedule_upsert`,
``store/sql/schedules/upsert.sql``); this module names them for the additive
sync (:mod:`.sync`) and an owner's reconciliation
(:mod:`awa_django.reconciliation`). The SQL function ``awa_cron_upsert_v2``
(migration 0004) does what the additive form does; it stays installed for
binaries that call it.
"""

from __future__ import annotations

from ..store.schedule_upsert import insert_new_names, sync_additive, sync_owned

__all__ = ["insert_new_names", "sync_additive", "sync_owned"]
