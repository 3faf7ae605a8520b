-- fragment: manifest_rows_insert
-- Insert an owner's manifest rows (awa_cron_manifests, by owner and desired
-- hash) as owned schedules; the two statements below add what they do on a
-- conflict. The column lists are those declarations/shape.py FIELDS derives
-- (a unit test compares them). Parameters: owner_id, desired_hash.
INSERT INTO awa_cron_jobs AS c (name, cron_expr, timezone, kind, queue, args, priority, max_attempts,
    tags, metadata, missed_fire_policy, overlap, starting_deadline, jitter, every_seconds, anchor,
    owner_id, created_at, updated_at)
SELECT d.name, d.cron_expr, d.timezone, d.kind, d.queue, d.args, d.priority, d.max_attempts, d.tags,
    d.metadata, d.missed_fire_policy, COALESCE(d.overlap, 'allow'), COALESCE(d.starting_deadline,
    NULL), COALESCE(d.jitter, 0), COALESCE(d.every_seconds, NULL), COALESCE(d.anchor, NULL),
    m.owner_id, clock_timestamp(), clock_timestamp()
  FROM awa_cron_manifests AS m, jsonb_to_recordset(m.manifest) AS d(name text, cron_expr text,
      timezone text, kind text, queue text, args jsonb, priority integer, max_attempts integer,
      tags text[], metadata jsonb, missed_fire_policy text, overlap text,
      starting_deadline double precision, jitter double precision, every_seconds integer,
      anchor timestamptz)
 WHERE m.owner_id = %s AND m.desired_hash = %s
 ORDER BY d.name

-- name: sync_owned_schedules
-- Make an owner's active rows match its manifest (awa_cron_manifests, by owner
-- and desired hash): new names inserted owned, changed definitions written;
-- a retired row, the fire clock, pause and lifecycle columns are never
-- touched, an unchanged definition is not written. Run under the owner's
-- manager context. A policy absent from a definition is written as its
-- default. The column lists are those schedules/shape.py FIELDS derives (a
-- unit test compares them).
/*@manifest_rows_insert*/
ON CONFLICT (name) DO UPDATE SET cron_expr = EXCLUDED.cron_expr, timezone = EXCLUDED.timezone,
    kind = EXCLUDED.kind, queue = EXCLUDED.queue, args = EXCLUDED.args, priority = EXCLUDED.priority,
    max_attempts = EXCLUDED.max_attempts, tags = EXCLUDED.tags, metadata = EXCLUDED.metadata,
    missed_fire_policy = EXCLUDED.missed_fire_policy, overlap = EXCLUDED.overlap,
    starting_deadline = EXCLUDED.starting_deadline, jitter = EXCLUDED.jitter,
    every_seconds = EXCLUDED.every_seconds, anchor = EXCLUDED.anchor,
    updated_at = clock_timestamp() WHERE c.owner_id = EXCLUDED.owner_id AND c.retired_at IS NULL AND (c.cron_expr,
    c.timezone, c.kind, c.queue, c.args, c.priority, c.max_attempts, c.tags, c.metadata,
    c.missed_fire_policy, c.overlap, c.starting_deadline, c.jitter, c.every_seconds,
    c.anchor) IS DISTINCT FROM (EXCLUDED.cron_expr, EXCLUDED.timezone, EXCLUDED.kind, EXCLUDED.queue,
    EXCLUDED.args, EXCLUDED.priority, EXCLUDED.max_attempts, EXCLUDED.tags, EXCLUDED.metadata,
    EXCLUDED.missed_fire_policy, EXCLUDED.overlap, EXCLUDED.starting_deadline, EXCLUDED.jitter,
    EXCLUDED.every_seconds, EXCLUDED.anchor);

-- name: insert_new_manifest_names
-- Insert the names of an owner's manifest that no row has yet, owned;
-- existing rows untouched. Columns as in sync_owned_schedules.
/*@manifest_rows_insert*/
ON CONFLICT (name) DO NOTHING;

-- name: sync_declared_schedules
-- Upsert code-declared definitions (a jsonb list) into unowned rows only;
-- returns (name, 'written' | 'owned') per name that is news: written, or
-- skipped because a deployment owns it. Columns as in sync_owned_schedules.
WITH d AS (SELECT * FROM jsonb_to_recordset(%s::jsonb) AS d(name text, cron_expr text, timezone text,
    kind text, queue text, args jsonb, priority integer, max_attempts integer, tags text[],
    metadata jsonb, missed_fire_policy text, overlap text, starting_deadline double precision,
    jitter double precision, every_seconds integer, anchor timestamptz)),
owned AS (
    SELECT c.name FROM awa_cron_jobs AS c JOIN d USING (name) WHERE c.owner_id IS NOT NULL
), written AS (
    INSERT INTO awa_cron_jobs AS c (name, cron_expr, timezone, kind, queue, args, priority,
        max_attempts, tags, metadata, missed_fire_policy, overlap, starting_deadline, jitter,
        every_seconds, anchor, owner_id, created_at, updated_at)
    SELECT d.name, d.cron_expr, d.timezone, d.kind, d.queue, d.args, d.priority, d.max_attempts,
        d.tags, d.metadata, d.missed_fire_policy, COALESCE(d.overlap, 'allow'),
        COALESCE(d.starting_deadline, NULL), COALESCE(d.jitter, 0), COALESCE(d.every_seconds, NULL),
        COALESCE(d.anchor, NULL), NULL, clock_timestamp(), clock_timestamp()
      FROM d WHERE d.name NOT IN (SELECT owned.name FROM owned)
     ORDER BY d.name
    ON CONFLICT (name) DO UPDATE SET cron_expr = EXCLUDED.cron_expr, timezone = EXCLUDED.timezone,
        kind = EXCLUDED.kind, queue = EXCLUDED.queue, args = EXCLUDED.args,
        priority = EXCLUDED.priority, max_attempts = EXCLUDED.max_attempts, tags = EXCLUDED.tags,
        metadata = EXCLUDED.metadata, missed_fire_policy = EXCLUDED.missed_fire_policy,
        overlap = EXCLUDED.overlap, starting_deadline = EXCLUDED.starting_deadline,
        jitter = EXCLUDED.jitter, every_seconds = EXCLUDED.every_seconds, anchor = EXCLUDED.anchor,
        updated_at = clock_timestamp() WHERE c.owner_id IS NULL AND c.retired_at IS NULL AND (c.cron_expr,
        c.timezone, c.kind, c.queue, c.args, c.priority, c.max_attempts, c.tags, c.metadata,
        c.missed_fire_policy, c.overlap, c.starting_deadline, c.jitter, c.every_seconds,
        c.anchor) IS DISTINCT FROM (EXCLUDED.cron_expr, EXCLUDED.timezone, EXCLUDED.kind,
        EXCLUDED.queue, EXCLUDED.args, EXCLUDED.priority, EXCLUDED.max_attempts, EXCLUDED.tags,
        EXCLUDED.metadata, EXCLUDED.missed_fire_policy, EXCLUDED.overlap, EXCLUDED.starting_deadline,
        EXCLUDED.jitter, EXCLUDED.every_seconds, EXCLUDED.anchor)
    RETURNING c.name
)
SELECT written.name, 'written' FROM written
UNION ALL
SELECT owned.name, 'owned' FROM owned;
