-- awa_complete_many: the current version, awa_complete_many_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

-- Complete many attempts in one statement: element i of the arrays is
-- attempt p_attempts[i] of job p_ids[i] with return value p_results[i]. Each
-- row is fenced like awa_complete_v1 (state = 'running' and the same attempt),
-- so a late report from an attempt that was rescued changes nothing. Returns
-- the rows completed (as stored, for task_finished); a stale report is absent.
CREATE FUNCTION awa_complete_many_v1(p_ids bigint[], p_attempts integer[], p_results jsonb[])
RETURNS SETOF awa_jobs
LANGUAGE sql VOLATILE AS $$
    UPDATE awa_jobs AS j
       SET state = 'completed', result = d.result, finished_at = clock_timestamp(),
           heartbeat_at = NULL
      FROM unnest(p_ids, p_attempts, p_results) AS d(id, attempt, result)
     WHERE j.id = d.id AND j.state = 'running' AND j.attempt = d.attempt
    RETURNING j.*
$$;
COMMENT ON FUNCTION awa_complete_many_v1(bigint[], integer[], jsonb[]) IS 'awa_django 0012_job_batches';
