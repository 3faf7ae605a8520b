-- Undo 0029_drop_superseded_functions.sql: every dropped version again, exactly as
-- its own migration installed it (statement, body and version comment copied from
-- that file), so check E050 finds each as shipped.

-- awa_claim_v1: from 0003_worker.sql.
CREATE FUNCTION awa_claim_v1(p_queues text[], p_limit integer, p_worker text)
RETURNS SETOF awa_jobs
LANGUAGE sql VOLATILE AS $$
    WITH ready AS (
        SELECT j.id
          FROM awa_jobs AS j
         WHERE j.state IN ('available', 'scheduled', 'retryable')
           AND j.run_at <= clock_timestamp()
           AND (p_queues IS NULL OR j.queue = ANY (p_queues))
           AND NOT EXISTS (SELECT 1 FROM awa_queue_meta AS q
                            WHERE q.queue = j.queue AND q.paused_at IS NOT NULL)
         ORDER BY j.priority DESC, j.run_at, j.id
         LIMIT p_limit
           FOR UPDATE OF j SKIP LOCKED
    )
    UPDATE awa_jobs AS j
       SET state = 'running',
           attempt = j.attempt + 1,
           attempted_at = clock_timestamp(),
           heartbeat_at = clock_timestamp(),
           worker_ids = array_append(j.worker_ids, p_worker)
      FROM ready
     WHERE j.id = ready.id
    RETURNING j.*
$$;
COMMENT ON FUNCTION awa_claim_v1(text[], integer, text) IS 'awa_django 0003_worker';

-- awa_complete_claim_v1: from 0013_complete_claim.sql.
CREATE FUNCTION awa_complete_claim_v1(
    p_ids bigint[], p_attempts integer[], p_results jsonb[],
    p_queues text[], p_limit integer, p_worker text)
RETURNS SETOF awa_jobs
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN QUERY
    UPDATE awa_jobs AS j
       SET state = 'completed', result = d.result, finished_at = clock_timestamp(),
           heartbeat_at = NULL
      FROM unnest(p_ids, p_attempts, p_results) AS d(id, attempt, result)
     WHERE j.id = d.id AND j.state = 'running' AND j.attempt = d.attempt
    RETURNING j.*;
    IF p_limit > 0 THEN
        RETURN QUERY
        WITH ready AS (
            SELECT j.id
              FROM awa_jobs AS j
             WHERE j.state IN ('available', 'scheduled', 'retryable')
               AND j.run_at <= clock_timestamp()
               AND (p_queues IS NULL OR j.queue = ANY (p_queues))
               AND NOT EXISTS (SELECT 1 FROM awa_queue_meta AS q
                                WHERE q.queue = j.queue AND q.paused_at IS NOT NULL)
             ORDER BY j.priority DESC, j.run_at, j.id
             LIMIT p_limit
               FOR UPDATE OF j SKIP LOCKED
        )
        UPDATE awa_jobs AS j
           SET state = 'running',
               attempt = j.attempt + 1,
               attempted_at = clock_timestamp(),
               heartbeat_at = clock_timestamp(),
               worker_ids = array_append(j.worker_ids, p_worker)
          FROM ready
         WHERE j.id = ready.id
        RETURNING j.*;
    END IF;
END
$$;
COMMENT ON FUNCTION awa_complete_claim_v1(bigint[], integer[], jsonb[], text[], integer, text)
    IS 'awa_django 0013_complete_claim';

-- awa_cron_fire_v1: from 0002_cron_core.sql.
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
COMMENT ON FUNCTION awa_cron_fire_v1(jsonb) IS 'awa_django 0002_cron_core';

-- awa_cron_fire_v2: from 0006_fire_in_name_order.sql.
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

-- awa_cron_fire_v3: from 0008_parked_rows.sql.
CREATE FUNCTION awa_cron_fire_v3(p_plan jsonb) RETURNS SETOF awa_jobs
LANGUAGE sql VOLATILE AS $$
    WITH plan AS (
        SELECT p.*
          FROM jsonb_to_recordset(p_plan) AS p(
                   name text, prev timestamptz, created_at timestamptz, prev_text text,
                   created_text text, cron_expr text, timezone text,
                   missed_fire_policy text, fires timestamptz[], next_fire_at timestamptz,
                   park text)
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
                                   ELSE '{}'::timestamptz[] END AS fires
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
COMMENT ON FUNCTION awa_cron_fire_v3(jsonb) IS 'awa_django 0008_parked_rows';

-- awa_cron_fire_v4: from 0016_fire_job_metadata.sql.
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

-- awa_cron_fire_v5: from 0018_execution_policies.sql.
CREATE FUNCTION awa_cron_fire_v5(p_plan jsonb) RETURNS SETOF awa_jobs
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    locked_names text[];
BEGIN
    -- Lock order of every writer: schedule rows by name.
    SELECT coalesce(array_agg(l.name ORDER BY l.name), '{}') INTO locked_names
      FROM (SELECT c.name
              FROM awa_cron_jobs AS c
             WHERE c.name IN (SELECT e ->> 'name' FROM jsonb_array_elements(p_plan) AS e)
             ORDER BY c.name
               FOR UPDATE SKIP LOCKED) AS l;
    IF cardinality(locked_names) = 0 THEN
        RETURN;
    END IF;
    PERFORM set_config('awa.cron_policies', 'on', true);
    RETURN QUERY
    WITH plan AS (
        SELECT p.*
          FROM jsonb_to_recordset(p_plan) AS p(
                   name text, prev timestamptz, created_at timestamptz, prev_text text,
                   created_text text, cron_expr text, timezone text,
                   missed_fire_policy text, starting_deadline double precision,
                   fires timestamptz[], missed timestamptz[], missed_count bigint,
                   advance timestamptz, next_fire_at timestamptz, park text, job_metadata jsonb)
         WHERE p.name = ANY (locked_names)
    ), busy AS MATERIALIZED (
        -- The unfinished jobs of each schedule with an overlap policy that
        -- has something to fire: one probe of awa_jobs_cron_unfinished per
        -- row (LATERAL), never a join over every unfinished job; computed
        -- once (MATERIALIZED: inlined, the planner may re-run it per row).
        SELECT c.name, c.overlap, u.unfinished, u.running, u.blocker
          FROM awa_cron_jobs AS c
          JOIN plan AS p ON p.name = c.name AND p.park IS NULL AND cardinality(p.fires) > 0
         CROSS JOIN LATERAL (
               SELECT count(*) AS unfinished, count(*) FILTER (WHERE j.state = 'running') AS running,
                      min(j.id) AS blocker
                 FROM awa_jobs AS j
                WHERE (j.metadata ->> 'cron_name') = c.name AND j.metadata ? 'cron_name'
                  AND j.state IN ('available', 'scheduled', 'running', 'retryable')) AS u
         WHERE c.overlap <> 'allow'
    ), mark AS (
        UPDATE awa_cron_jobs AS c
           SET last_enqueued_at = CASE WHEN p.park IS NULL
                                       THEN COALESCE(p.advance, p.fires[cardinality(p.fires)],
                                                     c.last_enqueued_at)
                                       ELSE c.last_enqueued_at END,
               next_fire_at = CASE WHEN p.park IS NULL THEN p.next_fire_at
                                   ELSE '9999-12-31T00:00:00+00:00' END,
               updated_at = CASE WHEN p.park IS NULL
                                      AND (p.advance IS NOT NULL OR cardinality(p.fires) > 0)
                                 THEN clock_timestamp() ELSE c.updated_at END,
               parked_at = CASE WHEN p.park IS NULL THEN NULL
                                ELSE COALESCE(c.parked_at, clock_timestamp()) END,
               parked_reason = p.park
          FROM plan AS p
          LEFT JOIN busy AS b ON b.name = p.name
         WHERE c.name = p.name
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
                         AND c.starting_deadline IS NOT DISTINCT FROM p.starting_deadline
                    ELSE c.last_enqueued_at::text IS NOT DISTINCT FROM p.prev_text
                         AND c.created_at::text IS NOT DISTINCT FROM p.created_text
               END
        RETURNING c.name, c.kind, c.queue, c.args, c.priority, c.max_attempts, c.tags,
                  c.metadata, c.jitter, c.overlap, b.blocker, p.job_metadata,
                  CASE WHEN p.park IS NULL THEN p.fires ELSE '{}'::timestamptz[] END AS fires,
                  CASE WHEN p.park IS NULL THEN COALESCE(p.missed, '{}') ELSE '{}'::timestamptz[] END AS missed,
                  CASE WHEN p.park IS NULL THEN COALESCE(p.missed_count, 0) ELSE 0 END AS missed_count,
                  CASE WHEN b.name IS NULL THEN cardinality(p.fires)
                       WHEN b.overlap = 'skip' THEN CASE WHEN b.unfinished > 0 THEN 0 ELSE 1 END
                       -- buffer_one: nothing while a job waits, else up to two unfinished.
                       WHEN b.unfinished > b.running THEN 0
                       ELSE greatest(0, 2 - b.unfinished)::integer END AS capacity
    ), slots AS (
        SELECT m.*, f.fire_at, f.n,
               CASE WHEN m.jitter > 0 THEN f.fire_at + awa_cron_jitter_v1(m.name, f.fire_at, m.jitter)
                    ELSE clock_timestamp() END AS run_at
          FROM mark AS m
         CROSS JOIN LATERAL unnest(m.fires) WITH ORDINALITY AS f(fire_at, n)
    ), outcomes AS (
        INSERT INTO awa_cron_slot_outcomes (name, slot, outcome, blocked_by)
        SELECT s.name, s.fire_at, 'skipped_overlap', s.blocker FROM slots AS s WHERE s.n > s.capacity
        UNION ALL
        SELECT m.name, x.slot, 'missed_deadline', NULL
          FROM mark AS m CROSS JOIN LATERAL unnest(m.missed) AS x(slot)
        RETURNING 1
    ), counted AS (
        INSERT INTO awa_cron_slot_counts AS k (name, reason, count, last_slot)
        SELECT t.name, t.reason, sum(t.n)::bigint, max(t.last_slot)
          FROM (SELECT s.name, 'overlap' AS reason, count(*) AS n, max(s.fire_at) AS last_slot
                  FROM slots AS s WHERE s.n > s.capacity GROUP BY s.name
                UNION ALL
                SELECT m.name, 'deadline', m.missed_count, m.missed[cardinality(m.missed)]
                  FROM mark AS m WHERE m.missed_count > 0) AS t
         GROUP BY t.name, t.reason
        ON CONFLICT (name, reason) DO UPDATE
           SET count = k.count + EXCLUDED.count,
               last_slot = GREATEST(k.last_slot, EXCLUDED.last_slot)
        RETURNING 1
    )
    INSERT INTO awa_jobs
        (kind, queue, args, state, priority, attempt, max_attempts, run_at, created_at,
         errors, tags, metadata)
    SELECT s.kind, s.queue, s.args,
           CASE WHEN s.run_at > clock_timestamp() THEN 'scheduled' ELSE 'available' END,
           s.priority, 0, s.max_attempts, s.run_at, clock_timestamp(), '[]'::jsonb, s.tags,
           s.metadata || CASE WHEN jsonb_typeof(s.job_metadata) = 'object'
                              THEN s.job_metadata ELSE '{}'::jsonb END
                      || jsonb_build_object('cron_name', s.name,
                                            'cron_fire_at', awa_format_fire_at(s.fire_at))
           -- buffer_one: the waiting job starts only once the running one
           -- ended, held back at claim time by a concurrency key of limit 1
           -- (awa_flow is rendered into the job's concurrency_key by
           -- 0017_flow_control's trigger on awa_jobs, awa_jobs_flow_keys_v1).
           || CASE WHEN s.overlap = 'buffer_one'
                   THEN jsonb_build_object('awa_flow',
                            CASE WHEN jsonb_typeof(s.metadata -> 'awa_flow') = 'object'
                                 THEN s.metadata -> 'awa_flow' ELSE '{}'::jsonb END
                            || jsonb_build_object('concurrency_key', 'awa:overlap:{name}',
                                                  'concurrency_limit', 1))
                   ELSE '{}'::jsonb END
      FROM slots AS s
     WHERE s.n <= s.capacity
     ORDER BY s.name, s.n
    ON CONFLICT DO NOTHING
    RETURNING *;
    PERFORM set_config('awa.cron_policies', '', true);
END
$$;
COMMENT ON FUNCTION awa_cron_fire_v5(jsonb) IS 'awa_django 0018_execution_policies';

-- awa_cron_fire_v6: from 0019_interval_schedules.sql.
CREATE FUNCTION awa_cron_fire_v6(p_plan jsonb) RETURNS SETOF awa_jobs
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    locked_names text[];
BEGIN
    -- Lock order of every writer: schedule rows by name.
    SELECT coalesce(array_agg(l.name ORDER BY l.name), '{}') INTO locked_names
      FROM (SELECT c.name
              FROM awa_cron_jobs AS c
             WHERE c.name IN (SELECT e ->> 'name' FROM jsonb_array_elements(p_plan) AS e)
             ORDER BY c.name
               FOR UPDATE SKIP LOCKED) AS l;
    IF cardinality(locked_names) = 0 THEN
        RETURN;
    END IF;
    PERFORM set_config('awa.cron_policies', 'on', true);
    RETURN QUERY
    WITH plan AS (
        SELECT p.*
          FROM jsonb_to_recordset(p_plan) AS p(
                   name text, prev timestamptz, created_at timestamptz, prev_text text,
                   created_text text, cron_expr text, every_seconds integer, anchor timestamptz,
                   timezone text,
                   missed_fire_policy text, starting_deadline double precision,
                   fires timestamptz[], missed timestamptz[], missed_count bigint,
                   advance timestamptz, next_fire_at timestamptz, park text, job_metadata jsonb)
         WHERE p.name = ANY (locked_names)
    ), busy AS MATERIALIZED (
        -- The unfinished jobs of each schedule with an overlap policy that
        -- has something to fire: one probe of awa_jobs_cron_unfinished per
        -- row (LATERAL), never a join over every unfinished job; computed
        -- once (MATERIALIZED: inlined, the planner may re-run it per row).
        SELECT c.name, c.overlap, u.unfinished, u.running, u.blocker
          FROM awa_cron_jobs AS c
          JOIN plan AS p ON p.name = c.name AND p.park IS NULL AND cardinality(p.fires) > 0
         CROSS JOIN LATERAL (
               SELECT count(*) AS unfinished, count(*) FILTER (WHERE j.state = 'running') AS running,
                      min(j.id) AS blocker
                 FROM awa_jobs AS j
                WHERE (j.metadata ->> 'cron_name') = c.name AND j.metadata ? 'cron_name'
                  AND j.state IN ('available', 'scheduled', 'running', 'retryable')) AS u
         WHERE c.overlap <> 'allow'
    ), mark AS (
        UPDATE awa_cron_jobs AS c
           SET last_enqueued_at = CASE WHEN p.park IS NULL
                                       THEN COALESCE(p.advance, p.fires[cardinality(p.fires)],
                                                     c.last_enqueued_at)
                                       ELSE c.last_enqueued_at END,
               next_fire_at = CASE WHEN p.park IS NULL THEN p.next_fire_at
                                   ELSE '9999-12-31T00:00:00+00:00' END,
               updated_at = CASE WHEN p.park IS NULL
                                      AND (p.advance IS NOT NULL OR cardinality(p.fires) > 0)
                                 THEN clock_timestamp() ELSE c.updated_at END,
               parked_at = CASE WHEN p.park IS NULL THEN NULL
                                ELSE COALESCE(c.parked_at, clock_timestamp()) END,
               parked_reason = p.park
          FROM plan AS p
          LEFT JOIN busy AS b ON b.name = p.name
         WHERE c.name = p.name
           AND c.paused_at IS NULL
           AND c.retired_at IS NULL
           -- The timing read: an expression or an interval (the other NULL).
           AND c.cron_expr IS NOT DISTINCT FROM p.cron_expr
           AND c.every_seconds IS NOT DISTINCT FROM p.every_seconds
           AND c.anchor IS NOT DISTINCT FROM p.anchor
           AND c.timezone = p.timezone
           AND c.missed_fire_policy = p.missed_fire_policy
           -- The compare-and-swap (see awa_cron_fire_v1), typed for a fire,
           -- on the text read for a parking.
           AND CASE WHEN p.park IS NULL
                    THEN c.last_enqueued_at IS NOT DISTINCT FROM p.prev
                         AND c.created_at = p.created_at
                         AND c.starting_deadline IS NOT DISTINCT FROM p.starting_deadline
                    ELSE c.last_enqueued_at::text IS NOT DISTINCT FROM p.prev_text
                         AND c.created_at::text IS NOT DISTINCT FROM p.created_text
               END
        RETURNING c.name, c.kind, c.queue, c.args, c.priority, c.max_attempts, c.tags,
                  c.metadata, c.jitter, c.overlap, b.blocker, p.job_metadata,
                  CASE WHEN p.park IS NULL THEN p.fires ELSE '{}'::timestamptz[] END AS fires,
                  CASE WHEN p.park IS NULL THEN COALESCE(p.missed, '{}') ELSE '{}'::timestamptz[] END AS missed,
                  CASE WHEN p.park IS NULL THEN COALESCE(p.missed_count, 0) ELSE 0 END AS missed_count,
                  CASE WHEN b.name IS NULL THEN cardinality(p.fires)
                       WHEN b.overlap = 'skip' THEN CASE WHEN b.unfinished > 0 THEN 0 ELSE 1 END
                       -- buffer_one: nothing while a job waits, else up to two unfinished.
                       WHEN b.unfinished > b.running THEN 0
                       ELSE greatest(0, 2 - b.unfinished)::integer END AS capacity
    ), slots AS (
        SELECT m.*, f.fire_at, f.n,
               CASE WHEN m.jitter > 0 THEN f.fire_at + awa_cron_jitter_v1(m.name, f.fire_at, m.jitter)
                    ELSE clock_timestamp() END AS run_at
          FROM mark AS m
         CROSS JOIN LATERAL unnest(m.fires) WITH ORDINALITY AS f(fire_at, n)
    ), outcomes AS (
        INSERT INTO awa_cron_slot_outcomes (name, slot, outcome, blocked_by)
        SELECT s.name, s.fire_at, 'skipped_overlap', s.blocker FROM slots AS s WHERE s.n > s.capacity
        UNION ALL
        SELECT m.name, x.slot, 'missed_deadline', NULL
          FROM mark AS m CROSS JOIN LATERAL unnest(m.missed) AS x(slot)
        RETURNING 1
    ), counted AS (
        INSERT INTO awa_cron_slot_counts AS k (name, reason, count, last_slot)
        SELECT t.name, t.reason, sum(t.n)::bigint, max(t.last_slot)
          FROM (SELECT s.name, 'overlap' AS reason, count(*) AS n, max(s.fire_at) AS last_slot
                  FROM slots AS s WHERE s.n > s.capacity GROUP BY s.name
                UNION ALL
                SELECT m.name, 'deadline', m.missed_count, m.missed[cardinality(m.missed)]
                  FROM mark AS m WHERE m.missed_count > 0) AS t
         GROUP BY t.name, t.reason
        ON CONFLICT (name, reason) DO UPDATE
           SET count = k.count + EXCLUDED.count,
               last_slot = GREATEST(k.last_slot, EXCLUDED.last_slot)
        RETURNING 1
    )
    INSERT INTO awa_jobs
        (kind, queue, args, state, priority, attempt, max_attempts, run_at, created_at,
         errors, tags, metadata)
    SELECT s.kind, s.queue, s.args,
           CASE WHEN s.run_at > clock_timestamp() THEN 'scheduled' ELSE 'available' END,
           s.priority, 0, s.max_attempts, s.run_at, clock_timestamp(), '[]'::jsonb, s.tags,
           s.metadata || CASE WHEN jsonb_typeof(s.job_metadata) = 'object'
                              THEN s.job_metadata ELSE '{}'::jsonb END
                      || jsonb_build_object('cron_name', s.name,
                                            'cron_fire_at', awa_format_fire_at(s.fire_at))
           -- buffer_one: the waiting job starts only once the running one
           -- ended, held back at claim time by a concurrency key of limit 1
           -- (awa_flow is rendered into the job's concurrency_key by
           -- 0017_flow_control's trigger on awa_jobs, awa_jobs_flow_keys_v1).
           || CASE WHEN s.overlap = 'buffer_one'
                   THEN jsonb_build_object('awa_flow',
                            CASE WHEN jsonb_typeof(s.metadata -> 'awa_flow') = 'object'
                                 THEN s.metadata -> 'awa_flow' ELSE '{}'::jsonb END
                            || jsonb_build_object('concurrency_key', 'awa:overlap:{name}',
                                                  'concurrency_limit', 1))
                   ELSE '{}'::jsonb END
      FROM slots AS s
     WHERE s.n <= s.capacity
     ORDER BY s.name, s.n
    ON CONFLICT DO NOTHING
    RETURNING *;
    PERFORM set_config('awa.cron_policies', '', true);
END
$$;
COMMENT ON FUNCTION awa_cron_fire_v6(jsonb) IS 'awa_django 0019_interval_schedules';

-- awa_cron_schedule_fence_v1: from 0004_reconciliation.sql.
CREATE FUNCTION awa_cron_schedule_fence_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    operator boolean := coalesce(current_setting('awa.cron_admin', true), '') = 'on';
    manager text := coalesce(current_setting('awa.cron_owner', true), '');
    volatile_keys text[] := ARRAY['last_enqueued_at', 'next_fire_at', 'updated_at',
                                  'paused_at', 'paused_by'];
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.retired_at IS NOT NULL THEN
            RAISE EXCEPTION 'cron schedule % is retired; its tombstone must be retained (restore it explicitly to reactivate)', OLD.name
                USING ERRCODE = '55000';
        ELSIF OLD.owner_id IS NOT NULL THEN
            RAISE EXCEPTION 'cron schedule % has durable ownership (owner %); retire it instead of deleting', OLD.name, OLD.owner_id
                USING ERRCODE = '55000';
        END IF;
        RETURN OLD;
    END IF;
    IF operator THEN
        RETURN NEW;
    END IF;
    IF (NEW.owner_id, NEW.retired_at, NEW.retired_by, NEW.retired_revision)
       IS DISTINCT FROM (OLD.owner_id, OLD.retired_at, OLD.retired_by, OLD.retired_revision) THEN
        RAISE EXCEPTION 'cron schedule %: lifecycle changes require an explicit operator action', OLD.name
            USING ERRCODE = '55000';
    END IF;
    IF OLD.retired_at IS NOT NULL THEN
        RETURN NULL;
    END IF;
    IF OLD.owner_id IS NOT NULL AND manager IS DISTINCT FROM OLD.owner_id
       AND (to_jsonb(NEW) - volatile_keys) IS DISTINCT FROM (to_jsonb(OLD) - volatile_keys) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION awa_cron_schedule_fence_v1() IS 'awa_django 0004_reconciliation';

-- awa_cron_schedule_fence_v2: from 0008_parked_rows.sql.
CREATE FUNCTION awa_cron_schedule_fence_v2() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    operator boolean := coalesce(current_setting('awa.cron_admin', true), '') = 'on';
    manager text := coalesce(current_setting('awa.cron_owner', true), '');
    volatile_keys text[] := ARRAY['last_enqueued_at', 'next_fire_at', 'updated_at',
                                  'paused_at', 'paused_by', 'parked_at', 'parked_reason'];
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.retired_at IS NOT NULL THEN
            RAISE EXCEPTION 'cron schedule % is retired; its tombstone must be retained (restore it explicitly to reactivate)', OLD.name
                USING ERRCODE = '55000';
        ELSIF OLD.owner_id IS NOT NULL THEN
            RAISE EXCEPTION 'cron schedule % has durable ownership (owner %); retire it instead of deleting', OLD.name, OLD.owner_id
                USING ERRCODE = '55000';
        END IF;
        RETURN OLD;
    END IF;
    IF operator THEN
        RETURN NEW;
    END IF;
    IF (NEW.owner_id, NEW.retired_at, NEW.retired_by, NEW.retired_revision)
       IS DISTINCT FROM (OLD.owner_id, OLD.retired_at, OLD.retired_by, OLD.retired_revision) THEN
        RAISE EXCEPTION 'cron schedule %: lifecycle changes require an explicit operator action', OLD.name
            USING ERRCODE = '55000';
    END IF;
    IF OLD.retired_at IS NOT NULL THEN
        RETURN NULL;
    END IF;
    IF OLD.owner_id IS NOT NULL AND manager IS DISTINCT FROM OLD.owner_id
       AND (to_jsonb(NEW) - volatile_keys) IS DISTINCT FROM (to_jsonb(OLD) - volatile_keys) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION awa_cron_schedule_fence_v2() IS 'awa_django 0008_parked_rows';

-- awa_release_v1: from 0007_release.sql.
CREATE FUNCTION awa_release_v1(p_id bigint, p_attempt integer, p_delay interval)
RETURNS text
LANGUAGE sql VOLATILE AS $$
    UPDATE awa_jobs
       SET state = CASE WHEN attempt > 1 THEN 'retryable' ELSE 'available' END,
           attempt = attempt - 1,
           worker_ids = trim_array(worker_ids, 1),
           run_at = clock_timestamp() + p_delay,
           heartbeat_at = NULL
     WHERE id = p_id AND state = 'running' AND attempt = p_attempt
    RETURNING state
$$;
COMMENT ON FUNCTION awa_release_v1(bigint, integer, interval) IS 'awa_django 0007_release';
