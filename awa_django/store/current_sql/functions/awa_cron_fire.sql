-- awa_cron_fire: the current version, awa_cron_fire_v8,
-- and the previous one, awa_cron_fire_v7, kept installed for processes of the
-- previous release (N-1: docs/explanation/sql-versions.md).
-- Each statement as its migration's SQL file installed it (named in its comment).

-- awa_cron_fire_v8: awa_cron_fire_v7's contract, and a slot whose job a unique
-- key refused is recorded ('skipped_unique', with the job holding the key)
-- and counted ('unique'), as an overlap skip is. v7 stays installed for the
-- leaders of the previous release during a rolling upgrade.
CREATE FUNCTION awa_cron_fire_v8(p_plan jsonb) RETURNS SETOF awa_jobs
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
                  c.metadata, c.jitter, c.overlap, p.job_metadata,
                  CASE WHEN p.park IS NULL THEN p.fires ELSE '{}'::timestamptz[] END AS fires,
                  CASE WHEN p.park IS NULL THEN COALESCE(p.missed, '{}') ELSE '{}'::timestamptz[] END AS missed,
                  CASE WHEN p.park IS NULL THEN COALESCE(p.missed_count, 0) ELSE 0 END AS missed_count,
                  -- The unfinished jobs of a schedule with an overlap policy
                  -- and a slot to fire, as [unfinished, running, oldest id]:
                  -- one probe of awa_jobs_cron_unfinished for such a row only,
                  -- read in the statement's snapshot, after the row lock.
                  CASE WHEN p.park IS NULL AND cardinality(p.fires) > 0 AND c.overlap <> 'allow'
                       THEN (SELECT ARRAY[count(*), count(*) FILTER (WHERE j.state = 'running'), min(j.id)]
                               FROM awa_jobs AS j
                              WHERE (j.metadata ->> 'cron_name') = c.name AND j.metadata ? 'cron_name'
                                AND j.state IN ('available', 'scheduled', 'running', 'retryable'))
                  END AS busy
    ), policed AS (
        -- How many of its slots each row may enqueue: all of them without a
        -- policy; with skip one, and none while a job is unfinished; with
        -- buffer_one none while a job waits, else up to two unfinished.
        SELECT m.*, m.busy[3] AS blocker,
               CASE WHEN m.busy IS NULL THEN cardinality(m.fires)
                    WHEN m.overlap = 'skip' THEN CASE WHEN m.busy[1] > 0 THEN 0 ELSE 1 END
                    WHEN m.busy[1] > m.busy[2] THEN 0
                    ELSE greatest(0, 2 - m.busy[1])::integer END AS capacity
          FROM mark AS m
    ), slots AS (
        SELECT m.*, f.fire_at, f.n,
               CASE WHEN m.jitter > 0 THEN f.fire_at + awa_cron_jitter_v1(m.name, f.fire_at, m.jitter)
                    ELSE clock_timestamp() END AS run_at
          FROM policed AS m
         CROSS JOIN LATERAL unnest(m.fires) WITH ORDINALITY AS f(fire_at, n)
    ), inserted AS (
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
               -- 0026_payload_measure's trigger on awa_jobs, awa_jobs_flow_keys_v2).
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
        RETURNING *
    ), unique_skips AS (
        -- Slots the policy let through that inserted no job: a unique key an
        -- unfinished job holds refused them (ON CONFLICT DO NOTHING). A slot
        -- whose job is in the ledger already (awa_jobs_cron_slot) is not one.
        -- The holder: the oldest unfinished job with the key, committed before
        -- this statement or inserted by it (an earlier slot of the same row).
        SELECT s.name, s.fire_at,
               least((SELECT min(h.id) FROM awa_jobs AS h
                       WHERE h.unique_key = k.key
                         AND h.state IN ('available', 'scheduled', 'running', 'retryable')),
                     (SELECT min(i.id) FROM inserted AS i WHERE i.unique_key = k.key)) AS holder
          FROM slots AS s
         CROSS JOIN LATERAL (SELECT awa_flow_key_v1(s.metadata -> 'awa_flow' ->> 'unique_key', s.name,
                                                    awa_format_fire_at(s.fire_at)) AS key) AS k
         WHERE s.n <= s.capacity
           AND jsonb_typeof(s.metadata -> 'awa_flow' -> 'unique_key') = 'string'
           -- NOT IN over an uncorrelated subquery: one hash of the inserted
           -- slots for the whole batch (a correlated NOT EXISTS scanned every
           -- inserted job once per slot: quadratic in a catch-up batch).
           AND (s.name, awa_format_fire_at(s.fire_at)) NOT IN (
                   SELECT i.metadata ->> 'cron_name', i.metadata ->> 'cron_fire_at' FROM inserted AS i)
           AND NOT EXISTS (SELECT 1 FROM awa_jobs AS j
                            WHERE (j.metadata ->> 'cron_name') = s.name AND j.metadata ? 'cron_fire_at'
                              AND (j.metadata ->> 'cron_fire_at') = awa_format_fire_at(s.fire_at))
    ), outcomes AS (
        INSERT INTO awa_cron_slot_outcomes (name, slot, outcome, blocked_by)
        SELECT s.name, s.fire_at, 'skipped_overlap', s.blocker FROM slots AS s WHERE s.n > s.capacity
        UNION ALL
        SELECT m.name, x.slot, 'missed_deadline', NULL
          FROM mark AS m CROSS JOIN LATERAL unnest(m.missed) AS x(slot)
        UNION ALL
        SELECT u.name, u.fire_at, 'skipped_unique', u.holder FROM unique_skips AS u
        RETURNING 1
    ), counted AS (
        INSERT INTO awa_cron_slot_counts AS k (name, reason, count, last_slot)
        SELECT t.name, t.reason, sum(t.n)::bigint, max(t.last_slot)
          FROM (SELECT s.name, 'overlap' AS reason, count(*) AS n, max(s.fire_at) AS last_slot
                  FROM slots AS s WHERE s.n > s.capacity GROUP BY s.name
                UNION ALL
                SELECT m.name, 'deadline', m.missed_count, m.missed[cardinality(m.missed)]
                  FROM mark AS m WHERE m.missed_count > 0
                UNION ALL
                SELECT u.name, 'unique', count(*), max(u.fire_at)
                  FROM unique_skips AS u GROUP BY u.name) AS t
         GROUP BY t.name, t.reason
        ON CONFLICT (name, reason) DO UPDATE
           SET count = k.count + EXCLUDED.count,
               last_slot = GREATEST(k.last_slot, EXCLUDED.last_slot)
        RETURNING 1
    )
    -- In insertion order (by name, then slot), as awa_cron_fire_v7 returned them.
    SELECT i.* FROM inserted AS i ORDER BY i.id;
    PERFORM set_config('awa.cron_policies', '', true);
END
$$;
COMMENT ON FUNCTION awa_cron_fire_v8(jsonb) IS 'awa_django 0026_payload_measure';

-- Why a probe and not a join: the unfinished jobs of the batch's policy rows,
-- read in a CTE and joined to the plan, are estimated at one row, and the
-- planner runs that join as a nested loop over plan x policy rows (250,000
-- comparisons for a 500-row batch of "skip" schedules). Each updated row with a
-- policy probes awa_jobs_cron_unfinished from the UPDATE's RETURNING list
-- instead: the same rows, the same snapshot, no join.
CREATE FUNCTION awa_cron_fire_v7(p_plan jsonb) RETURNS SETOF awa_jobs
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
                  c.metadata, c.jitter, c.overlap, p.job_metadata,
                  CASE WHEN p.park IS NULL THEN p.fires ELSE '{}'::timestamptz[] END AS fires,
                  CASE WHEN p.park IS NULL THEN COALESCE(p.missed, '{}') ELSE '{}'::timestamptz[] END AS missed,
                  CASE WHEN p.park IS NULL THEN COALESCE(p.missed_count, 0) ELSE 0 END AS missed_count,
                  -- The unfinished jobs of a schedule with an overlap policy
                  -- and a slot to fire, as [unfinished, running, oldest id]:
                  -- one probe of awa_jobs_cron_unfinished for such a row only,
                  -- read in the statement's snapshot, after the row lock.
                  CASE WHEN p.park IS NULL AND cardinality(p.fires) > 0 AND c.overlap <> 'allow'
                       THEN (SELECT ARRAY[count(*), count(*) FILTER (WHERE j.state = 'running'), min(j.id)]
                               FROM awa_jobs AS j
                              WHERE (j.metadata ->> 'cron_name') = c.name AND j.metadata ? 'cron_name'
                                AND j.state IN ('available', 'scheduled', 'running', 'retryable'))
                  END AS busy
    ), policed AS (
        -- How many of its slots each row may enqueue: all of them without a
        -- policy; with skip one, and none while a job is unfinished; with
        -- buffer_one none while a job waits, else up to two unfinished.
        SELECT m.*, m.busy[3] AS blocker,
               CASE WHEN m.busy IS NULL THEN cardinality(m.fires)
                    WHEN m.overlap = 'skip' THEN CASE WHEN m.busy[1] > 0 THEN 0 ELSE 1 END
                    WHEN m.busy[1] > m.busy[2] THEN 0
                    ELSE greatest(0, 2 - m.busy[1])::integer END AS capacity
          FROM mark AS m
    ), slots AS (
        SELECT m.*, f.fire_at, f.n,
               CASE WHEN m.jitter > 0 THEN f.fire_at + awa_cron_jitter_v1(m.name, f.fire_at, m.jitter)
                    ELSE clock_timestamp() END AS run_at
          FROM policed AS m
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
COMMENT ON FUNCTION awa_cron_fire_v7(jsonb) IS 'awa_django 0020_fire_policy_probe';
