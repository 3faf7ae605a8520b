-- awa_django 0003_worker: the SQL objects behind the runtasks worker.
-- Installed by migration 0003_worker, undone by 0003_worker.reverse.sql.
-- Frozen once released (see 0002_cron_core.sql).

ALTER TABLE awa_jobs ALTER COLUMN worker_ids SET DEFAULT '{}';

-- Bulk cancel and the admin look jobs up by schedule name.
CREATE INDEX awa_jobs_cron_name ON awa_jobs ((metadata ->> 'cron_name'))
    WHERE metadata ? 'cron_name';

-- Wake workers (LISTEN awa_jobs) when jobs become ready: new jobs, and queue
-- resume. One notification per statement, folded per transaction.
CREATE FUNCTION awa_jobs_notify_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('awa_jobs', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER awa_jobs_notify
    AFTER INSERT ON awa_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION awa_jobs_notify_v1();

CREATE TRIGGER awa_queue_meta_notify
    AFTER INSERT OR UPDATE ON awa_queue_meta
    FOR EACH STATEMENT EXECUTE FUNCTION awa_jobs_notify_v1();

-- Claim up to p_limit ready jobs for worker p_worker. FOR UPDATE SKIP LOCKED
-- lets any number of workers claim concurrently without blocking each other or
-- taking the same row. Queue pause is enforced here, at dispatch, and never at
-- enqueue (ADR-007). The claim starts a new attempt: attempt + 1, recorded in
-- worker_ids, heartbeat stamped.
CREATE FUNCTION awa_claim_v1(p_queues text[], p_limit integer, p_worker text)
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
    )
    UPDATE awa_jobs AS j
       SET state = 'running',
           attempt = j.attempt + 1,
           attempted_at = clock_timestamp(),
           heartbeat_at = clock_timestamp(),
           worker_ids = array_append(j.worker_ids, p_worker)
      FROM ready
     WHERE j.id = ready.id
    RETURNING j.*
$$;

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

-- Keep running attempts alive.
CREATE FUNCTION awa_heartbeat_v1(p_ids bigint[], p_attempts integer[])
RETURNS integer
LANGUAGE sql VOLATILE AS $$
    WITH beat AS (
        UPDATE awa_jobs AS j
           SET heartbeat_at = clock_timestamp()
          FROM unnest(p_ids, p_attempts) AS r(id, attempt)
         WHERE j.id = r.id AND j.attempt = r.attempt AND j.state = 'running'
        RETURNING 1
    )
    SELECT count(*)::integer FROM beat
$$;

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

COMMENT ON FUNCTION awa_jobs_notify_v1() IS 'awa_django 0003_worker';
COMMENT ON FUNCTION awa_claim_v1(text[], integer, text) IS 'awa_django 0003_worker';
COMMENT ON FUNCTION awa_complete_v1(bigint, integer, jsonb) IS 'awa_django 0003_worker';
COMMENT ON FUNCTION awa_fail_v1(bigint, integer, jsonb, timestamptz) IS 'awa_django 0003_worker';
COMMENT ON FUNCTION awa_heartbeat_v1(bigint[], integer[]) IS 'awa_django 0003_worker';
COMMENT ON FUNCTION awa_rescue_v1(interval) IS 'awa_django 0003_worker';
