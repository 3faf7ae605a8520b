-- awa_fail_job: the current version, awa_fail_job_v2,
-- and the previous one, awa_fail_job_v1, kept installed for processes of the
-- previous release (N-1: docs/explanation/sql-versions.md).
-- Each statement as its migration's SQL file installed it (named in its comment).

-- awa_fail_job_v1, appending through awa_errors_append_v1.
CREATE FUNCTION awa_fail_job_v2(p_id bigint, p_attempt integer, p_error jsonb,
                                p_max_bytes integer, p_max_depth integer)
RETURNS text
LANGUAGE sql VOLATILE AS $$
    UPDATE awa_jobs
       SET state = 'failed',
           finished_at = clock_timestamp(),
           errors = awa_errors_append_v1(errors, p_error, p_max_bytes, p_max_depth),
           heartbeat_at = NULL
     WHERE id = p_id AND state = 'running' AND attempt = p_attempt
    RETURNING state
$$;
COMMENT ON FUNCTION awa_fail_job_v2(bigint, integer, jsonb, integer, integer) IS 'awa_django 0025_bounded_errors';

-- Fail attempt p_attempt of job p_id for good, whatever attempts remain: the
-- job itself cannot run (its task path is not a task, its arguments have the
-- wrong shape). Guarded like awa_fail_v1; NULL when the report is stale.
CREATE FUNCTION awa_fail_job_v1(p_id bigint, p_attempt integer, p_error jsonb)
RETURNS text
LANGUAGE sql VOLATILE AS $$
    UPDATE awa_jobs
       SET state = 'failed',
           finished_at = clock_timestamp(),
           errors = errors || jsonb_build_array(p_error),
           heartbeat_at = NULL
     WHERE id = p_id AND state = 'running' AND attempt = p_attempt
    RETURNING state
$$;
COMMENT ON FUNCTION awa_fail_job_v1(bigint, integer, jsonb) IS 'awa_django 0009_task_outcomes';
