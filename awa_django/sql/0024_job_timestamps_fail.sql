-- awa_django 0024_job_timestamps_fail: every unfinished job holding a timestamp
-- outside what awa_jobs_timestamps_check (0024_job_timestamps.sql) allows ends
-- failed, its error naming the job, each such column and its stored value
-- (kept as stored: finished jobs are exempt from the check). Run by migration
-- 0024_job_timestamps once the check refuses new such rows, in a transaction
-- of its own that locks only the rows it fails; then
-- 0024_job_timestamps_validate.sql finds none.
WITH bad AS (
    SELECT id, concat_ws(', ',
               CASE WHEN NOT coalesce(c.run_at BETWEEN r.low AND r.high, TRUE)
                    THEN 'run_at ' || c.run_at::text END,
               CASE WHEN NOT coalesce(c.created_at BETWEEN r.low AND r.high, TRUE)
                    THEN 'created_at ' || c.created_at::text END,
               CASE WHEN NOT coalesce(c.attempted_at BETWEEN r.low AND r.high, TRUE)
                    THEN 'attempted_at ' || c.attempted_at::text END,
               CASE WHEN NOT coalesce(c.started_at BETWEEN r.low AND r.high, TRUE)
                    THEN 'started_at ' || c.started_at::text END,
               CASE WHEN NOT coalesce(c.heartbeat_at BETWEEN r.low AND r.high, TRUE)
                    THEN 'heartbeat_at ' || c.heartbeat_at::text END,
               CASE WHEN NOT coalesce(c.finished_at BETWEEN r.low AND r.high, TRUE)
                    THEN 'finished_at ' || c.finished_at::text END) AS why
      FROM awa_jobs AS c,
           (SELECT timestamptz '0001-01-02 00:00:00+00' AS low,
                   timestamptz '9999-12-30 23:59:59.999999+00' AS high) AS r
     WHERE c.state NOT IN ('completed', 'failed', 'cancelled')
)
UPDATE awa_jobs AS j
   SET state = 'failed',
       finished_at = clock_timestamp(),
       errors = j.errors || jsonb_build_array(jsonb_build_object(
           'exception_class_path', 'awa_django.exceptions.InvalidJobRow',
           'traceback', 'awa_django.exceptions.InvalidJobRow: job ' || j.id
               || ' holds a timestamp no job can have (' || bad.why
               || '); failed by migration 0024_job_timestamps',
           'attempt', j.attempt))
  FROM bad
 WHERE j.id = bad.id AND bad.why <> ''
   AND j.state NOT IN ('completed', 'failed', 'cancelled');
