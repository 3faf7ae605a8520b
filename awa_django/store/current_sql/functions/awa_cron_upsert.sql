-- awa_cron_upsert: the current version, awa_cron_upsert_v2,
-- and the previous one, awa_cron_upsert_v1, kept installed for processes of the
-- previous release (N-1: docs/explanation/sql-versions.md).
-- Each statement as its migration's SQL file installed it (named in its comment).

-- Additive sync, ownership-aware (replaces awa_cron_upsert_v1 for current
-- runtimes; v1 stays for old writers and is fenced by the trigger above).
-- Unowned active rows are upserted as before; unowned retired rows are a
-- quiet no-op; owned rows are not touched and their names are returned in
-- "conflicts" so the caller can report them.
CREATE FUNCTION awa_cron_upsert_v2(p_definitions jsonb)
RETURNS TABLE (name text, outcome text)
LANGUAGE sql VOLATILE AS $$
    WITH defs AS (
        SELECT d.*
          FROM jsonb_to_recordset(p_definitions) AS d(
                   name text, cron_expr text, timezone text, kind text, queue text,
                   args jsonb, priority integer, max_attempts integer, tags text[],
                   metadata jsonb, missed_fire_policy text)
    ), owned AS (
        SELECT c.name FROM awa_cron_jobs AS c JOIN defs USING (name)
         WHERE c.owner_id IS NOT NULL
    ), written AS (
        INSERT INTO awa_cron_jobs AS c
            (name, cron_expr, timezone, kind, queue, args, priority, max_attempts, tags,
             metadata, missed_fire_policy, created_at, updated_at)
        SELECT d.name, d.cron_expr, d.timezone, d.kind, d.queue, d.args, d.priority,
               d.max_attempts, d.tags, d.metadata, d.missed_fire_policy,
               clock_timestamp(), clock_timestamp()
          FROM defs AS d
         WHERE d.name NOT IN (SELECT owned.name FROM owned)
         ORDER BY d.name
        ON CONFLICT (name) DO UPDATE
           SET cron_expr = EXCLUDED.cron_expr, timezone = EXCLUDED.timezone,
               kind = EXCLUDED.kind, queue = EXCLUDED.queue, args = EXCLUDED.args,
               priority = EXCLUDED.priority, max_attempts = EXCLUDED.max_attempts,
               tags = EXCLUDED.tags, metadata = EXCLUDED.metadata,
               missed_fire_policy = EXCLUDED.missed_fire_policy,
               updated_at = clock_timestamp()
         WHERE c.owner_id IS NULL AND c.retired_at IS NULL
           AND (c.cron_expr, c.timezone, c.kind, c.queue, c.args, c.priority, c.max_attempts,
                c.tags, c.metadata, c.missed_fire_policy)
               IS DISTINCT FROM
               (EXCLUDED.cron_expr, EXCLUDED.timezone, EXCLUDED.kind, EXCLUDED.queue,
                EXCLUDED.args, EXCLUDED.priority, EXCLUDED.max_attempts, EXCLUDED.tags,
                EXCLUDED.metadata, EXCLUDED.missed_fire_policy)
        RETURNING c.name
    )
    SELECT written.name, 'written' FROM written
    UNION ALL
    SELECT owned.name, 'owned' FROM owned
$$;
COMMENT ON FUNCTION awa_cron_upsert_v2(jsonb) IS 'awa_django 0004_reconciliation';

-- Additive definition sync: insert new schedules, update changed definitions,
-- never delete, never touch last_enqueued_at, pause or lifecycle columns, and
-- leave unchanged rows alone (no churn, no notifications). Retired rows are
-- tombstones and ignore the sync. Rows are written in name order so concurrent
-- syncs lock them in the same order.
CREATE FUNCTION awa_cron_upsert_v1(p_definitions jsonb) RETURNS SETOF text
LANGUAGE sql VOLATILE AS $$
    INSERT INTO awa_cron_jobs AS c
        (name, cron_expr, timezone, kind, queue, args, priority, max_attempts, tags,
         metadata, missed_fire_policy, created_at, updated_at)
    SELECT d.name, d.cron_expr, d.timezone, d.kind, d.queue, d.args, d.priority,
           d.max_attempts, d.tags, d.metadata, d.missed_fire_policy,
           clock_timestamp(), clock_timestamp()
      FROM jsonb_to_recordset(p_definitions) AS d(
               name text, cron_expr text, timezone text, kind text, queue text, args jsonb,
               priority integer, max_attempts integer, tags text[], metadata jsonb,
               missed_fire_policy text)
     ORDER BY d.name
    ON CONFLICT (name) DO UPDATE
       SET cron_expr = EXCLUDED.cron_expr,
           timezone = EXCLUDED.timezone,
           kind = EXCLUDED.kind,
           queue = EXCLUDED.queue,
           args = EXCLUDED.args,
           priority = EXCLUDED.priority,
           max_attempts = EXCLUDED.max_attempts,
           tags = EXCLUDED.tags,
           metadata = EXCLUDED.metadata,
           missed_fire_policy = EXCLUDED.missed_fire_policy,
           updated_at = clock_timestamp()
     WHERE c.retired_at IS NULL
       AND (c.cron_expr, c.timezone, c.kind, c.queue, c.args, c.priority, c.max_attempts,
            c.tags, c.metadata, c.missed_fire_policy)
           IS DISTINCT FROM
           (EXCLUDED.cron_expr, EXCLUDED.timezone, EXCLUDED.kind, EXCLUDED.queue,
            EXCLUDED.args, EXCLUDED.priority, EXCLUDED.max_attempts, EXCLUDED.tags,
            EXCLUDED.metadata, EXCLUDED.missed_fire_policy)
    RETURNING c.name
$$;
COMMENT ON FUNCTION awa_cron_upsert_v1(jsonb) IS 'awa_django 0002_cron_core';
