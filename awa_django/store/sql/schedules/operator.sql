-- name: schedule_rows_safe
-- Every column of awa_cron_jobs rows (one row by name, or all with a NULL
-- name), by name, for the operator views: a timestamp no Python datetime can
-- hold ('infinity', year 10000+, BC, by raw SQL) reads as NULL plus its text
-- in <column>_text, instead of failing for every row. Parameter: name.
SELECT name, cron_expr, every_seconds, anchor, timezone, kind, queue, args, priority, max_attempts,
       tags, metadata, missed_fire_policy, overlap, starting_deadline, jitter,
       CASE WHEN last_enqueued_at BETWEEN '0001-01-02' AND '9999-12-30' THEN last_enqueued_at END
           AS last_enqueued_at, last_enqueued_at::text AS last_enqueued_at_text,
       CASE WHEN next_fire_at BETWEEN '0001-01-02' AND '9999-12-30' THEN next_fire_at END
           AS next_fire_at, next_fire_at::text AS next_fire_at_text,
       CASE WHEN created_at BETWEEN '0001-01-02' AND '9999-12-30' THEN created_at END
           AS created_at, created_at::text AS created_at_text,
       CASE WHEN updated_at BETWEEN '0001-01-02' AND '9999-12-30' THEN updated_at END
           AS updated_at, updated_at::text AS updated_at_text,
       CASE WHEN paused_at BETWEEN '0001-01-02' AND '9999-12-30' THEN paused_at END
           AS paused_at, paused_at::text AS paused_at_text,
       paused_by,
       CASE WHEN retired_at BETWEEN '0001-01-02' AND '9999-12-30' THEN retired_at END
           AS retired_at, retired_at::text AS retired_at_text,
       retired_by, retired_revision, owner_id,
       CASE WHEN parked_at BETWEEN '0001-01-02' AND '9999-12-30' THEN parked_at END
           AS parked_at, parked_at::text AS parked_at_text,
       parked_reason
  FROM awa_cron_jobs
 WHERE %(name)s::text IS NULL OR name = %(name)s
 ORDER BY name;

-- name: lock_schedule_state
-- Lock one row and read the state the operator verbs decide on, flags
-- computed in SQL: a pause or retirement no datetime can hold must not stop
-- an operator from resuming or removing the row.
SELECT paused_at IS NOT NULL, paused_by, retired_at IS NOT NULL, owner_id
  FROM awa_cron_jobs WHERE name = %s FOR UPDATE;

-- name: pause_schedule
-- Stop the automatic fires of one row (pausing stamps who and when).
-- Parameters: actor, name.
UPDATE awa_cron_jobs
   SET paused_at = statement_timestamp(), paused_by = %s, updated_at = statement_timestamp()
 WHERE name = %s;

-- name: resume_schedule
-- Resume the automatic fires of one row.
UPDATE awa_cron_jobs SET paused_at = NULL, paused_by = NULL, updated_at = statement_timestamp()
 WHERE name = %s;

-- name: remove_schedule
-- Delete one row (the jobs it enqueued stay).
DELETE FROM awa_cron_jobs WHERE name = %s;

-- name: trigger_schedule
-- Enqueue one job for a schedule now, even while paused (awa_cron_trigger_v1):
-- the job row, or none for a retired or missing schedule. Parameters: name, actor.
SELECT * FROM awa_cron_trigger_v1(%s, %s);

-- name: schedule_owner
-- The owner of one row (no row: no schedule of that name).
SELECT owner_id FROM awa_cron_jobs WHERE name = %s;

-- name: schedule_names
-- Every stored name (to find a look-alike of a new one).
SELECT name FROM awa_cron_jobs;

-- name: schedule_names_owners
-- Every stored name with its owner and whether it is retired (an import's
-- taken names).
SELECT name, owner_id, retired_at IS NOT NULL FROM awa_cron_jobs;

-- name: schedule_name_exists
-- Whether a row of this name exists.
SELECT EXISTS (SELECT 1 FROM awa_cron_jobs WHERE name = %s);

-- name: pause_runtime_schedules
-- Pause the named runtime rows (an import's paused ones) as actor.
-- Parameters: actor, names, owner.
UPDATE awa_cron_jobs
   SET paused_at = clock_timestamp(), paused_by = %s, updated_at = clock_timestamp()
 WHERE name = ANY(%s) AND owner_id = %s;

-- name: release_schedule
-- Release a row from its owner and lifecycle (an operator's change, under the
-- operator context), so the fence lets it be deleted.
UPDATE awa_cron_jobs SET owner_id = NULL, retired_at = NULL, retired_by = NULL, retired_revision = NULL
 WHERE name = %s;

-- name: notify_schedules_changed
-- Wake the leader (it LISTENs on the channel) after a change of schedules.
SELECT pg_notify(%s, '');

-- name: schedules_last_jobs
-- The newest job of each named schedule: one index scan per name
-- (awa_jobs_cron_name_id), one query per admin page. Parameter: names.
SELECT n.name, j.id, j.state, j.metadata ? 'triggered_manually'
  FROM unnest(%s::text[]) AS n(name)
 CROSS JOIN LATERAL (
       SELECT id, state, metadata FROM awa_jobs
        WHERE metadata ? 'cron_name' AND metadata ->> 'cron_name' = n.name
        ORDER BY id DESC LIMIT 1) AS j;
