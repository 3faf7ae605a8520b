-- awa_django 0006_fire_in_name_order: awa_cron_fire_v2.
-- Same contract as awa_cron_fire_v1 (0002_cron_core.sql), but the schedule
-- rows of a pass are locked in name order before they are marked, the lock
-- order every other writer (reconciliation, operator actions, sync) follows.
-- Two leaders overlapping after a failover, or a fire racing a retirement,
-- then queue behind each other instead of deadlocking. v1 stays installed for
-- writers that still call it.
CREATE FUNCTION awa_cron_fire_v2(p_plan jsonb) RETURNS SETOF awa_jobs
LANGUAGE sql VOLATILE AS $$
    WITH plan AS (
        SELECT p.*
          FROM jsonb_to_recordset(p_plan) AS p(
                   name text, prev timestamptz, created_at timestamptz, cron_expr text,
                   timezone text, missed_fire_policy text, fires timestamptz[],
                   next_fire_at timestamptz)
    ), locked AS (
        SELECT c.name
          FROM awa_cron_jobs AS c
         WHERE c.name IN (SELECT plan.name FROM plan)
         ORDER BY c.name
           FOR UPDATE
    ), mark AS (
        UPDATE awa_cron_jobs AS c
           SET last_enqueued_at = COALESCE(p.fires[cardinality(p.fires)], c.last_enqueued_at),
               next_fire_at = p.next_fire_at,
               updated_at = CASE WHEN cardinality(p.fires) > 0 THEN clock_timestamp()
                                 ELSE c.updated_at END
          FROM plan AS p, locked AS l
         WHERE c.name = p.name
           AND l.name = p.name
           -- The compare-and-swap and its guards: see awa_cron_fire_v1.
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
    ON CONFLICT DO NOTHING
    RETURNING *
$$;

COMMENT ON FUNCTION awa_cron_fire_v2(jsonb) IS 'awa_django 0006_fire_in_name_order';
