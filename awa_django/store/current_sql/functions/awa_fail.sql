-- awa_fail: the current version, awa_fail_v2,
-- and the previous one, awa_fail_v1, kept installed for processes of the
-- previous release (N-1: docs/explanation/sql-versions.md).
-- Each statement as its migration's SQL file installed it (named in its comment).

-- awa_fail_v1, appending through awa_errors_append_v1.
CREATE FUNCTION awa_fail_v2(p_id bigint, p_attempt integer, p_error jsonb, p_retry_at timestamptz,
                            p_max_bytes integer, p_max_depth integer)
RETURNS text
LANGUAGE sql VOLATILE AS $$
    UPDATE awa_jobs
       SET state = CASE WHEN attempt >= max_attempts THEN 'failed' ELSE 'retryable' END,
           run_at = CASE WHEN attempt >= max_attempts THEN run_at ELSE p_retry_at END,
           finished_at = CASE WHEN attempt >= max_attempts THEN clock_timestamp() END,
           errors = awa_errors_append_v1(errors, p_error, p_max_bytes, p_max_depth),
           heartbeat_at = NULL
     WHERE id = p_id AND state = 'running' AND attempt = p_attempt
    RETURNING state
$$;
COMMENT ON FUNCTION awa_fail_v2(bigint, integer, jsonb, timestamptz, integer, integer) IS 'awa_django 0025_bounded_errors';

-- Record a failed attempt: retryable at p_retry_at while attempts remain,
-- else failed for good.
CREATE FUNCTION awa_fail_v1(p_id bigint, p_attempt integer, p_error jsonb, p_retry_at timestamptz)
RETURNS text
LANGUAGE sql VOLATILE AS $$
    UPDATE awa_jobs
       SET state = CASE WHEN attempt >= max_attempts THEN 'failed' ELSE 'retryable' END,
           run_at = CASE WHEN attempt >= max_attempts THEN run_at ELSE p_retry_at END,
           finished_at = CASE WHEN attempt >= max_attempts THEN clock_timestamp() END,
           errors = errors || jsonb_build_array(p_error),
           heartbeat_at = NULL
     WHERE id = p_id AND state = 'running' AND attempt = p_attempt
    RETURNING state
$$;
COMMENT ON FUNCTION awa_fail_v1(bigint, integer, jsonb, timestamptz) IS 'awa_django 0003_worker';
