-- awa_complete_claim: the current version, awa_complete_claim_v3,
-- and the previous one, awa_complete_claim_v2, kept installed for processes of the
-- previous release (N-1: docs/explanation/sql-versions.md).
-- Each statement as its migration's SQL file installed it (named in its comment).

-- awa_complete_claim_v2 (0014_claim_order.sql) with keys and queue limits:
-- the completions come first, so the slots they free are claimable by the
-- same statement.
CREATE FUNCTION awa_complete_claim_v3(
    p_ids bigint[], p_attempts integer[], p_results jsonb[],
    p_queues text[], p_limit integer, p_worker text, p_limits jsonb)
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
        RETURN QUERY SELECT * FROM awa_claim_v3(p_queues, p_limit, p_worker, p_limits);
    END IF;
END
$$;
COMMENT ON FUNCTION awa_complete_claim_v3(bigint[], integer[], jsonb[], text[], integer, text, jsonb)
    IS 'awa_django 0017_flow_control';

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
COMMENT ON FUNCTION awa_complete_claim_v2(bigint[], integer[], jsonb[], text[], integer, text)
    IS 'awa_django 0014_claim_order';
