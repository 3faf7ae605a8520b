-- awa_django 0014_claim_order: claimed jobs come back in the order they start.
-- Installed by migration 0014_claim_order, undone by 0014_claim_order.reverse.sql.
-- Frozen once released (see 0002_cron_core.sql).
--
-- UPDATE ... RETURNING returns rows in the order the plan happens to produce
-- them, whatever order chose the candidates: the order of a claim's rows is
-- made a property of the statement by an ORDER BY on the returned rows
-- (highest priority, then earliest run_at, then id), on every server version
-- and every plan. The worker starts claimed jobs in the order it gets them.
-- The _v1 functions stay for processes of the previous release during a
-- rolling deploy.

-- awa_claim_v1 (0003_worker.sql), with its rows in start order.
CREATE FUNCTION awa_claim_v2(p_queues text[], p_limit integer, p_worker text)
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
    ), claimed AS (
        UPDATE awa_jobs AS j
           SET state = 'running',
               attempt = j.attempt + 1,
               attempted_at = clock_timestamp(),
               heartbeat_at = clock_timestamp(),
               worker_ids = array_append(j.worker_ids, p_worker)
          FROM ready
         WHERE j.id = ready.id
        RETURNING j.*
    )
    SELECT * FROM claimed ORDER BY priority DESC, run_at, id
$$;

-- awa_complete_claim_v1 (0013_complete_claim.sql), with its claimed rows in
-- start order after the completed ones.
CREATE FUNCTION awa_complete_claim_v2(
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
        ), claimed AS (
            UPDATE awa_jobs AS j
               SET state = 'running',
                   attempt = j.attempt + 1,
                   attempted_at = clock_timestamp(),
                   heartbeat_at = clock_timestamp(),
                   worker_ids = array_append(j.worker_ids, p_worker)
              FROM ready
             WHERE j.id = ready.id
            RETURNING j.*
        )
        SELECT * FROM claimed AS c ORDER BY c.priority DESC, c.run_at, c.id;
    END IF;
END
$$;

COMMENT ON FUNCTION awa_claim_v2(text[], integer, text) IS 'awa_django 0014_claim_order';
COMMENT ON FUNCTION awa_complete_claim_v2(bigint[], integer[], jsonb[], text[], integer, text)
    IS 'awa_django 0014_claim_order';
