-- awa_django 0009_task_outcomes: every task ends with its real outcome.
-- Installed by migration 0009_task_outcomes, undone by 0009_task_outcomes.reverse.sql.
-- Frozen once released (see 0002_cron_core.sql).

-- django.tasks priorities are -100..100. Enqueue validates them, but a row
-- written by hand or by another client must not sort above every real job.
-- NOT VALID then VALIDATE: the check of existing rows takes no write lock.
ALTER TABLE awa_jobs ADD CONSTRAINT awa_jobs_priority_check
    CHECK (priority >= -100 AND priority <= 100) NOT VALID;
ALTER TABLE awa_jobs VALIDATE CONSTRAINT awa_jobs_priority_check;

-- TaskResult.started_at is "when the task began execution, on its first
-- attempt". The claim stamps attempted_at (the latest attempt) only; this
-- trigger keeps the first one, and forgets it when an attempt is handed back
-- (awa_release_*), so no claim function has to know about it.
UPDATE awa_jobs SET started_at = attempted_at WHERE attempt > 0 AND started_at IS NULL;

CREATE FUNCTION awa_jobs_started_at_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.attempt = 0 THEN
        NEW.started_at := NULL;
    ELSIF NEW.started_at IS NULL THEN
        NEW.started_at := NEW.attempted_at;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER awa_jobs_started_at
    BEFORE UPDATE OF attempt ON awa_jobs
    FOR EACH ROW WHEN (NEW.attempt IS DISTINCT FROM OLD.attempt)
    EXECUTE FUNCTION awa_jobs_started_at_v1();

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

COMMENT ON FUNCTION awa_jobs_started_at_v1() IS 'awa_django 0009_task_outcomes';
COMMENT ON FUNCTION awa_fail_job_v1(bigint, integer, jsonb) IS 'awa_django 0009_task_outcomes';
COMMENT ON FUNCTION awa_release_v2(bigint, integer, interval, interval, jsonb) IS 'awa_django 0009_task_outcomes';
