-- awa_django 0002_cron_core: the SQL objects behind exactly-once cron fires.
-- Installed by migration 0002_cron_core, undone by 0002_cron_core.reverse.sql.
-- Frozen once released: changed behaviour ships as a new file, migration and
-- function version suffix (_v2), never as an edit of this one.

-- Array defaults live here: the custom text[] model field has no db_default.
ALTER TABLE awa_cron_jobs ALTER COLUMN tags SET DEFAULT '{}';
ALTER TABLE awa_jobs ALTER COLUMN tags SET DEFAULT '{}';

-- Fire times in job metadata are ISO-8601 UTC text, e.g. 2026-03-29T01:00:00+00:00,
-- independent of the session TimeZone (Awa's ::text cast was not).
CREATE FUNCTION awa_format_fire_at(p_fire_at timestamptz) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
AS $$ SELECT to_char(p_fire_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') || '+00:00' $$;

-- Exactly once per slot, even across remove and re-create of a schedule: at
-- most one automatic job per (cron_name, cron_fire_at). Manual triggers carry
-- no cron_fire_at and are not limited.
CREATE UNIQUE INDEX awa_jobs_cron_slot
    ON awa_jobs ((metadata ->> 'cron_name'), (metadata ->> 'cron_fire_at'))
    WHERE metadata ? 'cron_fire_at';

-- next_fire_at is derived state. Any change to what it depends on resets it to
-- NULL ("compute me"), unless the same statement sets it (the leader's fire
-- statement writes last_enqueued_at and the new next_fire_at together). Doing
-- this in a trigger means no writer (ORM .update(), raw SQL, an admin) can
-- leave a stale value behind.
CREATE FUNCTION awa_cron_jobs_invalidate_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.next_fire_at := NULL;
    ELSIF NEW.next_fire_at IS NOT DISTINCT FROM OLD.next_fire_at
      AND (NEW.cron_expr, NEW.timezone, NEW.missed_fire_policy, NEW.last_enqueued_at,
           NEW.created_at, NEW.paused_at, NEW.retired_at)
          IS DISTINCT FROM
          (OLD.cron_expr, OLD.timezone, OLD.missed_fire_policy, OLD.last_enqueued_at,
           OLD.created_at, OLD.paused_at, OLD.retired_at) THEN
        NEW.next_fire_at := NULL;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER awa_cron_jobs_invalidate
    BEFORE INSERT OR UPDATE ON awa_cron_jobs
    FOR EACH ROW EXECUTE FUNCTION awa_cron_jobs_invalidate_v1();

-- Wake the leader (LISTEN awa_cron) when a row needs its next fire computed:
-- new schedules, definition changes, resume. Identical payloads are folded by
-- PostgreSQL into one notification per transaction.
CREATE FUNCTION awa_cron_jobs_notify_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('awa_cron', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER awa_cron_jobs_notify
    AFTER INSERT OR UPDATE ON awa_cron_jobs
    FOR EACH ROW WHEN (NEW.next_fire_at IS NULL)
    EXECUTE FUNCTION awa_cron_jobs_notify_v1();

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

-- THE fire statement. One call carries every due fire of an evaluation pass
-- (set-based), yet each schedule row is its own compare-and-swap:
--   * last_enqueued_at IS NOT DISTINCT FROM the value the leader read (NULL
--     matches NULL for a first fire): another leader that fired first makes
--     this row match nothing, so it inserts nothing. A lost CAS is not an error.
--   * paused_at IS NULL / retired_at IS NULL are re-checked here, not only when
--     reading: they close the read -> pause/retire -> CAS window.
--   * the definition the fire times were computed from must still be current.
-- The UPDATE and the job INSERT are one statement, so a crash commits both or
-- neither: no "marked but not enqueued" fire. Plan entries with no fires only
-- store the freshly computed next_fire_at (under the same CAS).
-- p_plan: [{"name", "prev", "created_at", "cron_expr", "timezone",
--           "missed_fire_policy", "fires": [timestamptz...], "next_fire_at"}]
CREATE FUNCTION awa_cron_fire_v1(p_plan jsonb) RETURNS SETOF awa_jobs
LANGUAGE sql VOLATILE AS $$
    WITH plan AS (
        SELECT p.*
          FROM jsonb_to_recordset(p_plan) AS p(
                   name text, prev timestamptz, created_at timestamptz, cron_expr text,
                   timezone text, missed_fire_policy text, fires timestamptz[],
                   next_fire_at timestamptz)
    ), mark AS (
        UPDATE awa_cron_jobs AS c
           SET last_enqueued_at = COALESCE(p.fires[cardinality(p.fires)], c.last_enqueued_at),
               next_fire_at = p.next_fire_at,
               updated_at = CASE WHEN cardinality(p.fires) > 0 THEN clock_timestamp()
                                 ELSE c.updated_at END
          FROM plan AS p
         WHERE c.name = p.name
           AND c.last_enqueued_at IS NOT DISTINCT FROM p.prev
           AND c.paused_at IS NULL
           AND c.retired_at IS NULL
           AND c.created_at = p.created_at
           AND c.cron_expr = p.cron_expr
           AND c.timezone = p.timezone
           AND c.missed_fire_policy = p.missed_fire_policy
        RETURNING c.name, c.kind, c.queue, c.args, c.priority, c.max_attempts, c.tags,
                  c.metadata, p.fires
    )
    INSERT INTO awa_jobs
        (kind, queue, args, state, priority, attempt, max_attempts, run_at, created_at,
         errors, tags, metadata)
    SELECT m.kind, m.queue, m.args, 'available', m.priority, 0, m.max_attempts,
           clock_timestamp(), clock_timestamp(), '[]'::jsonb, m.tags,
           m.metadata || jsonb_build_object('cron_name', m.name,
                                            'cron_fire_at', awa_format_fire_at(f.fire_at))
      FROM mark AS m
     CROSS JOIN LATERAL unnest(m.fires) WITH ORDINALITY AS f(fire_at, n)
     ORDER BY m.name, f.n
    -- The slot index makes a repeated slot (remove + re-create) a no-op.
    ON CONFLICT DO NOTHING
    RETURNING *
$$;

-- Manual trigger: an explicit operator action, so it bypasses pause and does
-- not move last_enqueued_at (the automatic schedule is unaffected). Retired
-- rows are refused; FOR SHARE serialises against a concurrent retire.
CREATE FUNCTION awa_cron_trigger_v1(p_name text, p_actor text) RETURNS SETOF awa_jobs
LANGUAGE sql VOLATILE AS $$
    WITH s AS (
        SELECT * FROM awa_cron_jobs
         WHERE name = p_name AND retired_at IS NULL
           FOR SHARE
    )
    INSERT INTO awa_jobs
        (kind, queue, args, state, priority, attempt, max_attempts, run_at, created_at,
         errors, tags, metadata)
    SELECT s.kind, s.queue, s.args, 'available', s.priority, 0, s.max_attempts,
           clock_timestamp(), clock_timestamp(), '[]'::jsonb, s.tags,
           s.metadata || jsonb_build_object('cron_name', s.name, 'triggered_manually', true,
                                            'triggered_by', p_actor)
      FROM s
    RETURNING *
$$;

COMMENT ON FUNCTION awa_cron_fire_v1(jsonb) IS 'awa_django 0002_cron_core';
COMMENT ON FUNCTION awa_cron_trigger_v1(text, text) IS 'awa_django 0002_cron_core';
COMMENT ON FUNCTION awa_cron_upsert_v1(jsonb) IS 'awa_django 0002_cron_core';
COMMENT ON FUNCTION awa_cron_jobs_invalidate_v1() IS 'awa_django 0002_cron_core';
COMMENT ON FUNCTION awa_cron_jobs_notify_v1() IS 'awa_django 0002_cron_core';
COMMENT ON FUNCTION awa_format_fire_at(timestamptz) IS 'awa_django 0002_cron_core';
