-- name: trim_slot_history
-- Rows beyond the newest few (kept) of their schedule, or of a schedule that no
-- longer exists (its counters go with it). The schedules' names come first:
-- PostgreSQL locks the tables as it parses the statement, and awa_cron_jobs
-- goes before the slot tables in the lock order (awa_django.db.lock_order),
-- so a migration holding the schedules never waits for this statement while
-- it waits for the migration.
WITH schedules AS MATERIALIZED (
    SELECT name FROM awa_cron_jobs
), excess AS (
    SELECT id FROM (
        SELECT o.id, row_number() OVER (PARTITION BY o.name ORDER BY o.slot DESC, o.id DESC) AS n
          FROM awa_cron_slot_outcomes AS o) AS ranked
     WHERE n > %(kept)s
    UNION ALL
    SELECT o.id FROM awa_cron_slot_outcomes AS o
     WHERE NOT EXISTS (SELECT 1 FROM schedules AS c WHERE c.name = o.name)
), gone AS (
    DELETE FROM awa_cron_slot_counts AS k
     WHERE NOT EXISTS (SELECT 1 FROM schedules AS c WHERE c.name = k.name)
)
DELETE FROM awa_cron_slot_outcomes WHERE id IN (SELECT id FROM excess);
