-- awa_rescue: the current version, awa_rescue_v2,
-- and the previous one, awa_rescue_v1, kept installed for processes of the
-- previous release (N-1: docs/explanation/sql-versions.md).
-- Each statement as its migration's SQL file installed it (named in its comment).

-- awa_rescue_v1, one row at a time: each rescued attempt's error is appended
-- through awa_errors_append_v1, and should appending to a row's stored errors
-- fail all the same, that row's errors are replaced by a note naming the
-- failure, so the row is rescued, and every other row with it.
CREATE FUNCTION awa_rescue_v2(p_stale_after interval, p_max_bytes integer, p_max_depth integer)
RETURNS SETOF awa_jobs
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    stale record;
    entry jsonb;
    new_errors jsonb;
    rescued awa_jobs;
BEGIN
    FOR stale IN
        SELECT id, attempt, worker_ids[cardinality(worker_ids)] AS worker_id
          FROM awa_jobs
         WHERE state = 'running' AND heartbeat_at < clock_timestamp() - p_stale_after
         ORDER BY id
           FOR UPDATE SKIP LOCKED
    LOOP
        entry := jsonb_build_object(
            'exception_class_path', 'awa_django.exceptions.WorkerLost',
            'traceback', 'awa_django: attempt ' || stale.attempt || ' rescued: worker '
                         || coalesce(stale.worker_id, '?') || ' stopped heartbeating',
            'attempt', stale.attempt,
            'worker_id', stale.worker_id,
            'at', awa_format_fire_at(clock_timestamp()));
        BEGIN
            SELECT awa_errors_append_v1(j.errors, entry, p_max_bytes, p_max_depth) INTO new_errors
              FROM awa_jobs AS j WHERE j.id = stale.id;
        EXCEPTION WHEN OTHERS THEN
            new_errors := jsonb_build_array(jsonb_build_object(
                'exception_class_path', 'awa_django.exceptions.ErrorsDropped',
                'traceback', 'awa_django: the earlier errors of this job were dropped: '
                             || 'appending to them failed: ' || SQLERRM,
                'attempt', stale.attempt), entry);
        END;
        UPDATE awa_jobs AS j
           SET state = CASE WHEN j.attempt >= j.max_attempts THEN 'failed' ELSE 'retryable' END,
               run_at = clock_timestamp(),
               finished_at = CASE WHEN j.attempt >= j.max_attempts THEN clock_timestamp() END,
               heartbeat_at = NULL,
               errors = new_errors
         WHERE j.id = stale.id
        RETURNING j.* INTO rescued;
        RETURN NEXT rescued;
    END LOOP;
END
$$;
COMMENT ON FUNCTION awa_rescue_v2(interval, integer, integer) IS 'awa_django 0025_bounded_errors';

-- Rescue attempts whose worker stopped heartbeating: the attempt counts, the
-- job goes back to retryable (or failed when no attempts remain). Any worker
-- may run this; SKIP LOCKED keeps concurrent rescuers from colliding.
CREATE FUNCTION awa_rescue_v1(p_stale_after interval)
RETURNS SETOF awa_jobs
LANGUAGE sql VOLATILE AS $$
    WITH stale AS (
        SELECT id FROM awa_jobs
         WHERE state = 'running' AND heartbeat_at < clock_timestamp() - p_stale_after
         ORDER BY id
           FOR UPDATE SKIP LOCKED
    )
    UPDATE awa_jobs AS j
       SET state = CASE WHEN j.attempt >= j.max_attempts THEN 'failed' ELSE 'retryable' END,
           run_at = clock_timestamp(),
           finished_at = CASE WHEN j.attempt >= j.max_attempts THEN clock_timestamp() END,
           heartbeat_at = NULL,
           errors = j.errors || jsonb_build_array(jsonb_build_object(
               'exception_class_path', 'awa_django.exceptions.WorkerLost',
               'traceback', 'awa_django: attempt ' || j.attempt || ' rescued: worker '
                            || coalesce(j.worker_ids[cardinality(j.worker_ids)], '?')
                            || ' stopped heartbeating',
               'attempt', j.attempt,
               'worker_id', j.worker_ids[cardinality(j.worker_ids)],
               'at', awa_format_fire_at(clock_timestamp())))
      FROM stale
     WHERE j.id = stale.id
    RETURNING j.*
$$;
COMMENT ON FUNCTION awa_rescue_v1(interval) IS 'awa_django 0003_worker';
