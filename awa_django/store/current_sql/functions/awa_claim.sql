-- awa_claim: the current version, awa_claim_v3,
-- and the previous one, awa_claim_v2, kept installed for processes of the
-- previous release (N-1: docs/explanation/sql-versions.md).
-- Each statement as its migration's SQL file installed it (named in its comment).

-- awa_claim_v2 (0014_claim_order.sql) with keys and queue limits; its rows
-- in start order.
CREATE FUNCTION awa_claim_v3(p_queues text[], p_limit integer, p_worker text, p_limits jsonb)
RETURNS SETOF awa_jobs
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    ids bigint[];
BEGIN
    ids := awa_claim_pick_v1(p_queues, p_limit, p_limits);
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH claimed AS (
        UPDATE awa_jobs AS j
           SET state = 'running',
               attempt = j.attempt + 1,
               attempted_at = clock_timestamp(),
               heartbeat_at = clock_timestamp(),
               worker_ids = array_append(j.worker_ids, p_worker)
         WHERE j.id = ANY (ids)
        RETURNING j.*
    )
    SELECT * FROM claimed AS c ORDER BY c.priority DESC, c.run_at, c.id;
END
$$;
COMMENT ON FUNCTION awa_claim_v3(text[], integer, text, jsonb) IS 'awa_django 0017_flow_control';

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
COMMENT ON FUNCTION awa_claim_v2(text[], integer, text) IS 'awa_django 0014_claim_order';
