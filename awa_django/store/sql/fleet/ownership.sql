-- name: schedule_ownership
-- A schedule's name, owner and whether it is retired (a flag computed in SQL,
-- so a retired_at no Python datetime holds cannot fail a verb).
SELECT name, owner_id, retired_at IS NOT NULL FROM awa_cron_jobs
 WHERE name = %(name)s
 ORDER BY name;

-- name: schedule_ownership_for_update
-- The same, the row locked.
SELECT name, owner_id, retired_at IS NOT NULL FROM awa_cron_jobs
 WHERE name = %(name)s
 ORDER BY name
   FOR UPDATE;

-- name: owner_active_schedules
-- An owner's active schedules: name, owner, retired flag.
SELECT name, owner_id, retired_at IS NOT NULL FROM awa_cron_jobs
 WHERE owner_id = %(owner)s AND retired_at IS NULL
 ORDER BY name;

-- name: owner_active_schedules_for_update
-- The same, the rows locked in name order.
SELECT name, owner_id, retired_at IS NOT NULL FROM awa_cron_jobs
 WHERE owner_id = %(owner)s AND retired_at IS NULL
 ORDER BY name
   FOR UPDATE;

-- name: owner_retired_schedules
-- An owner's retired schedules: name, owner, retired flag.
SELECT name, owner_id, retired_at IS NOT NULL FROM awa_cron_jobs
 WHERE owner_id = %(owner)s AND retired_at IS NOT NULL
 ORDER BY name;

-- name: owner_retired_schedules_for_update
-- The same, the rows locked in name order.
SELECT name, owner_id, retired_at IS NOT NULL FROM awa_cron_jobs
 WHERE owner_id = %(owner)s AND retired_at IS NOT NULL
 ORDER BY name
   FOR UPDATE;

-- name: retire_schedules_by_operator
-- Tombstone the named active schedules (operator context).
UPDATE awa_cron_jobs SET retired_at = clock_timestamp(), retired_by = %(actor)s,
       retired_revision = 'operator', updated_at = clock_timestamp()
 WHERE name = ANY(%(names)s::text[]) AND retired_at IS NULL;

-- name: restore_schedules
-- Clear the tombstone of the named retired schedules (operator context). The
-- fire clock restarts at database now: retired time is never replayed.
UPDATE awa_cron_jobs SET retired_at = NULL, retired_by = NULL, retired_revision = NULL,
       last_enqueued_at = clock_timestamp(), updated_at = clock_timestamp()
 WHERE name = ANY(%(names)s::text[]) AND retired_at IS NOT NULL;

-- name: give_schedules_to_owner
-- The named schedules change owner (operator context).
UPDATE awa_cron_jobs SET owner_id = %(owner)s, updated_at = clock_timestamp()
 WHERE name = ANY(%(names)s::text[]);

-- name: lock_owners
-- Lock the named owners' rows, in owner order (under the protocol lock).
SELECT owner_id FROM awa_cron_owners
 WHERE owner_id = ANY(%(owners)s::text[])
 ORDER BY owner_id
   FOR UPDATE;

-- name: reset_owner_certificates
-- The named owners' certificate and agreement clock start over.
UPDATE awa_cron_owners SET synced_hash = NULL, agreed_hash = NULL, agreed_since = NULL, evidence_until = NULL
 WHERE owner_id = ANY(%(owners)s::text[]);

-- name: schedule_counts_by_owner
-- How many schedules (retired ones included) each of the named owners has.
SELECT owner_id, count(name) FROM awa_cron_jobs
 WHERE owner_id = ANY(%(owners)s::text[])
 GROUP BY owner_id;
