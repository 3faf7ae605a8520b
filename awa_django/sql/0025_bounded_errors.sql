-- awa_django 0025_bounded_errors: a job's errors stay readable, and one bad
-- row never fails the report or the rescue of another. Installed by migration
-- 0025_bounded_errors, undone by 0025_bounded_errors.reverse.sql. The
-- versions these replace (awa_fail_v1, awa_fail_job_v1, awa_release_v2,
-- awa_rescue_v1) stay installed for workers not yet upgraded.

-- errors stored uncompressed (new values; old ones keep their form until next
-- written): pg_column_size is then the value's real size, which the admin's
-- list and search test before reading any of it, so a value that compresses
-- well (a traceback of one repeated line, written by raw SQL) cannot pass for
-- a small one. A job's errors are bounded when written, so the cost is small.
ALTER TABLE awa_jobs ALTER COLUMN errors SET STORAGE EXTERNAL;

-- p_errors (a job's errors column) with p_entry appended, within what every
-- reader decodes: at most p_max_bytes of JSON text (AWA_MAX_ARGS_BYTES) and
-- p_max_depth levels (AWA_MAX_JSON_DEPTH). The newest entries are kept and
-- the oldest dropped, replaced by one note saying how many; a stored value
-- that is not an array, or nested deeper than p_max_depth (raw SQL), is
-- replaced by a note saying why. It never walks a deep value recursively:
-- the depth is measured level by level (awa_json_depth_v1) before anything
-- is appended to it.
CREATE FUNCTION awa_errors_append_v1(p_errors jsonb, p_entry jsonb, p_max_bytes integer, p_max_depth integer)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    problem text;
    budget bigint;
    kept jsonb;
    dropped integer;
    dropped_bytes bigint;
BEGIN
    IF p_errors IS NULL OR jsonb_typeof(p_errors) <> 'array' THEN
        problem := 'they were a JSON ' || coalesce(jsonb_typeof(p_errors), 'null') || ', not an array';
    ELSIF jsonb_array_length(p_errors) = 0 THEN
        RETURN jsonb_build_array(p_entry);
    ELSIF awa_json_depth_v1(p_errors, p_max_depth) > p_max_depth THEN
        problem := format('they were nested deeper than %s levels (AWA_MAX_JSON_DEPTH=%s)',
                          p_max_depth, p_max_depth);
    END IF;
    IF problem IS NOT NULL THEN
        RETURN jsonb_build_array(jsonb_build_object(
            'exception_class_path', 'awa_django.exceptions.ErrorsDropped',
            'traceback', 'awa_django: the earlier errors of this job were dropped: ' || problem,
            'attempt', p_entry -> 'attempt'), p_entry);
    END IF;
    -- ", " separates the entries in the text every reader decodes.
    IF octet_length(p_errors::text) + octet_length(p_entry::text) + 2 <= p_max_bytes THEN
        RETURN p_errors || jsonb_build_array(p_entry);
    END IF;
    -- Keep the newest entries that fit beside the new one and the note (400 bytes at most).
    budget := p_max_bytes - octet_length(p_entry::text) - 400;
    SELECT coalesce(jsonb_agg(e.value ORDER BY e.ord) FILTER (WHERE e.tail <= budget), '[]'::jsonb),
           count(*) FILTER (WHERE e.tail > budget),
           coalesce(sum(e.size) FILTER (WHERE e.tail > budget), 0)
      INTO kept, dropped, dropped_bytes
      FROM (SELECT a.value, a.ord, a.size, sum(a.size) OVER (ORDER BY a.ord DESC) AS tail
              FROM (SELECT value, ord, octet_length(value::text) + 2 AS size
                      FROM jsonb_array_elements(p_errors) WITH ORDINALITY AS x(value, ord)) AS a) AS e;
    RETURN jsonb_build_array(jsonb_build_object(
               'exception_class_path', 'awa_django.exceptions.ErrorsDropped',
               'traceback', format('awa_django: %s earlier error entries (%s bytes) were dropped to keep '
                                   'the errors of this job within AWA_MAX_ARGS_BYTES=%s',
                                   dropped, dropped_bytes, p_max_bytes),
               'attempt', p_entry -> 'attempt'))
           || kept || jsonb_build_array(p_entry);
END
$$;

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

COMMENT ON FUNCTION awa_errors_append_v1(jsonb, jsonb, integer, integer) IS 'awa_django 0025_bounded_errors';
COMMENT ON FUNCTION awa_fail_v2(bigint, integer, jsonb, timestamptz, integer, integer) IS 'awa_django 0025_bounded_errors';
COMMENT ON FUNCTION awa_fail_job_v2(bigint, integer, jsonb, integer, integer) IS 'awa_django 0025_bounded_errors';
COMMENT ON FUNCTION awa_release_v3(bigint, integer, interval, interval, jsonb, integer, integer) IS 'awa_django 0025_bounded_errors';
COMMENT ON FUNCTION awa_rescue_v2(interval, integer, integer) IS 'awa_django 0025_bounded_errors';
