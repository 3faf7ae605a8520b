-- name: count_finished_jobs_older_than
-- How many finished jobs finished longer ago than the age given (a prune's dry run).
SELECT count(*) FROM awa_jobs
 WHERE state = ANY (%(finished)s) AND finished_at < clock_timestamp() - %(age)s::interval;

-- name: prune_finished_jobs_batch
-- Delete up to a batch of jobs finished longer ago than the age given, through the
-- awa_jobs_finished index: a short transaction, no long lock. Rows another
-- session holds (a worker, an operator's retry) are skipped, never waited for,
-- and the outer WHERE re-checks state and age on the row actually deleted: a
-- job retried since the batch was chosen is never deleted.
DELETE FROM awa_jobs WHERE id IN (
       SELECT id FROM awa_jobs
        WHERE state = ANY (%(finished)s) AND finished_at < clock_timestamp() - %(age)s::interval
        LIMIT %(limit)s
          FOR UPDATE SKIP LOCKED)
   AND state = ANY (%(finished)s) AND finished_at < clock_timestamp() - %(age)s::interval;

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
