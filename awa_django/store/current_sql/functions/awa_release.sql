-- awa_release: the current version, awa_release_v3,
-- and the previous one, awa_release_v2, kept installed for processes of the
-- previous release (N-1: docs/explanation/sql-versions.md).
-- Each statement as its migration's SQL file installed it (named in its comment).

-- awa_release_v2, appending through awa_errors_append_v1.
CREATE FUNCTION awa_release_v3(p_id bigint, p_attempt integer, p_delay interval,
                               p_give_up_after interval, p_error jsonb,
                               p_max_bytes integer, p_max_depth integer)
RETURNS text
LANGUAGE sql VOLATILE AS $$
    -- Decide "expired" once: clock_timestamp() moves between evaluations.
    WITH job AS (
        SELECT id, created_at <= clock_timestamp() - p_give_up_after AS expired
          FROM awa_jobs
         WHERE id = p_id AND state = 'running' AND attempt = p_attempt
    )
    UPDATE awa_jobs AS j
       SET state = CASE WHEN job.expired THEN 'failed'
                        WHEN j.attempt > 1 THEN 'retryable' ELSE 'available' END,
           attempt = CASE WHEN job.expired THEN j.attempt ELSE j.attempt - 1 END,
           worker_ids = CASE WHEN job.expired THEN j.worker_ids ELSE trim_array(j.worker_ids, 1) END,
           run_at = CASE WHEN job.expired THEN j.run_at ELSE clock_timestamp() + p_delay END,
           finished_at = CASE WHEN job.expired THEN clock_timestamp() END,
           errors = CASE WHEN job.expired THEN awa_errors_append_v1(j.errors, p_error, p_max_bytes, p_max_depth)
                         ELSE j.errors END,
           heartbeat_at = NULL
      FROM job
     WHERE j.id = job.id AND j.state = 'running' AND j.attempt = p_attempt
    RETURNING j.state
$$;
COMMENT ON FUNCTION awa_release_v3(bigint, integer, interval, interval, jsonb, integer, integer) IS 'awa_django 0025_bounded_errors';

-- Hand back an attempt whose task module this worker does not have (several
-- deployments sharing a queue, a rolling deploy), like awa_release_v1, but
-- only while the job is younger than p_give_up_after: past that bound the
-- job fails with p_error instead of circulating forever.
CREATE FUNCTION awa_release_v2(p_id bigint, p_attempt integer, p_delay interval,
                               p_give_up_after interval, p_error jsonb)
RETURNS text
LANGUAGE sql VOLATILE AS $$
    -- Decide "expired" once: clock_timestamp() moves between evaluations.
    WITH job AS (
        SELECT id, created_at <= clock_timestamp() - p_give_up_after AS expired
          FROM awa_jobs
         WHERE id = p_id AND state = 'running' AND attempt = p_attempt
    )
    UPDATE awa_jobs AS j
       SET state = CASE WHEN job.expired THEN 'failed'
                        WHEN j.attempt > 1 THEN 'retryable' ELSE 'available' END,
           attempt = CASE WHEN job.expired THEN j.attempt ELSE j.attempt - 1 END,
           worker_ids = CASE WHEN job.expired THEN j.worker_ids ELSE trim_array(j.worker_ids, 1) END,
           run_at = CASE WHEN job.expired THEN j.run_at ELSE clock_timestamp() + p_delay END,
           finished_at = CASE WHEN job.expired THEN clock_timestamp() END,
           errors = CASE WHEN job.expired THEN j.errors || jsonb_build_array(p_error) ELSE j.errors END,
           heartbeat_at = NULL
      FROM job
     WHERE j.id = job.id AND j.state = 'running' AND j.attempt = p_attempt
    RETURNING j.state
$$;
COMMENT ON FUNCTION awa_release_v2(bigint, integer, interval, interval, jsonb) IS 'awa_django 0009_task_outcomes';
