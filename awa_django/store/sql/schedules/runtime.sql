-- name: lock_runtime_schedule
-- Lock one row and read its definition columns (FIELDS order), its owner
-- and whether it is retired.
SELECT name, cron_expr, timezone, kind, queue, args, priority, max_attempts, tags, metadata,
    missed_fire_policy, overlap, starting_deadline, jitter, every_seconds, anchor, owner_id,
    retired_at IS NOT NULL FROM awa_cron_jobs WHERE name = %s FOR UPDATE;

-- name: read_runtime_schedule
-- The columns of lock_runtime_schedule, without the lock.
SELECT name, cron_expr, timezone, kind, queue, args, priority, max_attempts, tags, metadata,
    missed_fire_policy, overlap, starting_deadline, jitter, every_seconds, anchor, owner_id,
    retired_at IS NOT NULL FROM awa_cron_jobs WHERE name = %s;

-- name: insert_runtime_schedules
-- Insert runtime definitions (a jsonb list) owned by the runtime owner; a
-- name taken meanwhile is left out (never overwritten); returns the names
-- inserted. Parameters: owner, definitions.
INSERT INTO awa_cron_jobs AS c (name, cron_expr, timezone, kind, queue, args, priority, max_attempts,
    tags, metadata, missed_fire_policy, overlap, starting_deadline, jitter, every_seconds, anchor,
    owner_id, created_at, updated_at)
SELECT d.name, d.cron_expr, d.timezone, d.kind, d.queue, d.args, d.priority, d.max_attempts, d.tags,
    d.metadata, d.missed_fire_policy, d.overlap, d.starting_deadline, d.jitter, d.every_seconds,
    d.anchor, %s, clock_timestamp(), clock_timestamp()
  FROM jsonb_to_recordset(%s::jsonb) AS d(name text, cron_expr text, timezone text, kind text,
      queue text, args jsonb, priority integer, max_attempts integer, tags text[], metadata jsonb,
      missed_fire_policy text, overlap text, starting_deadline double precision,
      jitter double precision, every_seconds integer, anchor timestamptz)
ON CONFLICT (name) DO NOTHING
RETURNING c.name;

-- name: update_runtime_schedule
-- Write a runtime row's definition (a jsonb list of one); with a new timing,
-- the fire clock moves forward to the edit (a slot that fired stays fired,
-- the new timing starts at the edit). Returns the name when written.
-- Parameters: timing changed, definitions, owner.
UPDATE awa_cron_jobs AS c
   SET cron_expr = d.cron_expr, timezone = d.timezone, kind = d.kind, queue = d.queue, args = d.args,
       priority = d.priority, max_attempts = d.max_attempts, tags = d.tags, metadata = d.metadata,
       missed_fire_policy = d.missed_fire_policy, overlap = d.overlap,
       starting_deadline = d.starting_deadline, jitter = d.jitter, every_seconds = d.every_seconds,
       anchor = d.anchor,
       last_enqueued_at = CASE WHEN %s THEN greatest(c.last_enqueued_at, clock_timestamp())
                               ELSE c.last_enqueued_at END,
       updated_at = clock_timestamp()
  FROM jsonb_to_recordset(%s::jsonb) AS d(name text, cron_expr text, timezone text, kind text,
      queue text, args jsonb, priority integer, max_attempts integer, tags text[], metadata jsonb,
      missed_fire_policy text, overlap text, starting_deadline double precision,
      jitter double precision, every_seconds integer, anchor timestamptz)
 WHERE c.name = d.name AND c.owner_id = %s AND c.retired_at IS NULL
RETURNING c.name;
