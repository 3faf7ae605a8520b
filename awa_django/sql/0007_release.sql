-- awa_django 0007_release: hand a claimed attempt back without counting it.
-- A worker that cannot import a job's task (another deployment's code shares
-- the database and the queue) releases the job for a worker that can, after
-- p_delay, instead of burning its attempts. The attempt, its worker id and
-- heartbeat are undone; nothing else changes.
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
