-- awa_django 0016_fire_job_metadata: a plan entry of the fire statement may
-- carry metadata for the jobs it fires (the leader's trace context, see
-- awa_django.client.tracing), written in the same INSERT so no worker ever
-- claims a fired job without it.
-- Installed by migration 0016_fire_job_metadata, undone by
-- 0016_fire_job_metadata.reverse.sql. Frozen once released (see 0002_cron_core.sql).

-- awa_cron_fire_v3 with one more optional plan column, job_metadata (a jsonb
-- object; absent or anything else adds nothing): merged into each fired
-- job's metadata after the schedule row's own metadata and before cron_name /
-- cron_fire_at, which it can never replace. Every guard, the lock order and the compare-and-swap are
-- v3's. v3 stays installed for a leader of the previous release.
CREATE FUNCTION awa_cron_fire_v4(p_plan jsonb) RETURNS SETOF awa_jobs
LANGUAGE sql VOLATILE AS $$
    WITH plan AS (
        SELECT p.*
          FROM jsonb_to_recordset(p_plan) AS p(
                   name text, prev timestamptz, created_at timestamptz, prev_text text,
                   created_text text, cron_expr text, timezone text,
                   missed_fire_policy text, fires timestamptz[], next_fire_at timestamptz,
                   park text, job_metadata jsonb)
    ), locked AS (
        -- Lock order of every writer: schedule rows by name. A row another
        -- session holds (an operator action, a peer frozen inside its
        -- snapshot transaction) is skipped, not waited for: it stays due and
        -- fires at a later pass, and the other rows fire now.
        SELECT c.name
          FROM awa_cron_jobs AS c
         WHERE c.name IN (SELECT plan.name FROM plan)
         ORDER BY c.name
           FOR UPDATE SKIP LOCKED
    ), mark AS (
        UPDATE awa_cron_jobs AS c
           SET last_enqueued_at = CASE WHEN p.park IS NULL
                                       THEN COALESCE(p.fires[cardinality(p.fires)], c.last_enqueued_at)
                                       ELSE c.last_enqueued_at END,
               next_fire_at = CASE WHEN p.park IS NULL THEN p.next_fire_at
                                   ELSE '9999-12-31T00:00:00+00:00' END,
               updated_at = CASE WHEN p.park IS NULL AND cardinality(p.fires) > 0
                                 THEN clock_timestamp() ELSE c.updated_at END,
               parked_at = CASE WHEN p.park IS NULL THEN NULL
                                ELSE COALESCE(c.parked_at, clock_timestamp()) END,
               parked_reason = p.park
          FROM plan AS p, locked AS l
         WHERE c.name = p.name
           AND l.name = p.name
           AND c.paused_at IS NULL
           AND c.retired_at IS NULL
           AND c.cron_expr = p.cron_expr
           AND c.timezone = p.timezone
           AND c.missed_fire_policy = p.missed_fire_policy
           -- The compare-and-swap (see awa_cron_fire_v1), typed for a fire,
           -- on the text read for a parking.
           AND CASE WHEN p.park IS NULL
                    THEN c.last_enqueued_at IS NOT DISTINCT FROM p.prev
                         AND c.created_at = p.created_at
                    ELSE c.last_enqueued_at::text IS NOT DISTINCT FROM p.prev_text
                         AND c.created_at::text IS NOT DISTINCT FROM p.created_text
               END
        RETURNING c.name, c.kind, c.queue, c.args, c.priority, c.max_attempts, c.tags,
                  c.metadata, CASE WHEN p.park IS NULL THEN p.fires
                                   ELSE '{}'::timestamptz[] END AS fires,
                  p.job_metadata
    )
    INSERT INTO awa_jobs
        (kind, queue, args, state, priority, attempt, max_attempts, run_at, created_at,
         errors, tags, metadata)
    SELECT m.kind, m.queue, m.args, 'available', m.priority, 0, m.max_attempts,
           clock_timestamp(), clock_timestamp(), '[]'::jsonb, m.tags,
           m.metadata || CASE WHEN jsonb_typeof(m.job_metadata) = 'object'
                              THEN m.job_metadata ELSE '{}'::jsonb END
                      || jsonb_build_object('cron_name', m.name,
                                            'cron_fire_at', awa_format_fire_at(f.fire_at))
      FROM mark AS m
     CROSS JOIN LATERAL unnest(m.fires) WITH ORDINALITY AS f(fire_at, n)
     ORDER BY m.name, f.n
    ON CONFLICT DO NOTHING
    RETURNING *
$$;

COMMENT ON FUNCTION awa_cron_fire_v4(jsonb) IS 'awa_django 0016_fire_job_metadata';
