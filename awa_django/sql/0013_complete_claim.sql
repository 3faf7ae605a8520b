-- awa_django 0013_complete_claim: the worker completes finished attempts and
-- claims the slots they freed in one statement.
-- Installed by migration 0013_complete_claim, undone by 0013_complete_claim.reverse.sql.
-- Frozen once released (see 0002_cron_core.sql).

-- Complete many attempts and claim up to p_limit ready jobs for worker
-- p_worker, in one statement (one round trip, one transaction): the body of
-- awa_complete_many_v1(p_ids, p_attempts, p_results), then that of
-- awa_claim_v1(p_queues, p_limit, p_worker), with their guarantees. A
-- completion is fenced by (state = 'running', attempt): a late report from an
-- attempt that was rescued changes nothing and is absent from the result. A
-- claim starts a new attempt of each job it returns. The rows come back
-- together, the completed ones (state 'completed') first, then the claimed
-- ones (state 'running'): a row cannot be both, only 'running' rows complete
-- and only ready ones are claimed. PL/pgSQL, not SQL: its statements' plans
-- are kept for the session instead of planned at every call (the worker calls
-- it once per batch).
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
