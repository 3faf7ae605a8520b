-- awa_complete: the current version, awa_complete_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

-- Finish attempt p_attempt of job p_id. The (state, attempt) guard makes a
-- late report from an attempt that was rescued (its worker was presumed dead)
-- a no-op: exactly one outcome per attempt. Returns the new state, or NULL
-- when the report was stale.
CREATE FUNCTION awa_complete_v1(p_id bigint, p_attempt integer, p_result jsonb)
RETURNS text
LANGUAGE sql VOLATILE AS $$
    UPDATE awa_jobs
       SET state = 'completed', result = p_result, finished_at = clock_timestamp(),
           heartbeat_at = NULL
     WHERE id = p_id AND state = 'running' AND attempt = p_attempt
    RETURNING state
$$;
COMMENT ON FUNCTION awa_complete_v1(bigint, integer, jsonb) IS 'awa_django 0003_worker';
