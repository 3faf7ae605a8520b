-- An operator's verbs on jobs: cancel, retry, prune. The states are spelled out
-- so that the planner uses the partial indexes: awa_jobs_unique_key holds the
-- unfinished states ('available', 'scheduled', 'running', 'retryable'),
-- awa_jobs_finished the finished ones. A job an operator may cancel is not yet
-- running: a running attempt is owned by its worker, and cancelling under it
-- would race its completion; the UPDATE re-checks the state itself.

-- name: cancel_jobs_of_schedule
-- Cancel the not-yet-running jobs of schedule cron_name; their ids.
UPDATE awa_jobs
   SET state = 'cancelled', finished_at = clock_timestamp(),
       errors = awa_errors_append_v1(errors, jsonb_build_object(
           'exception_class_path', 'awa_django.exceptions.JobCancelled',
           'traceback', 'cancelled by ' || %(actor)s), %(max_bytes)s, %(max_depth)s)
 WHERE metadata ->> 'cron_name' = %(cron_name)s AND metadata ? 'cron_name'
   AND state IN ('available', 'scheduled', 'retryable')
RETURNING id;

-- name: cancel_jobs_by_id
-- Cancel the not-yet-running jobs among ids; their ids.
UPDATE awa_jobs
   SET state = 'cancelled', finished_at = clock_timestamp(),
       errors = awa_errors_append_v1(errors, jsonb_build_object(
           'exception_class_path', 'awa_django.exceptions.JobCancelled',
           'traceback', 'cancelled by ' || %(actor)s), %(max_bytes)s, %(max_depth)s)
 WHERE id = ANY (%(ids)s)
   AND state IN ('available', 'scheduled', 'retryable')
RETURNING id;

-- name: retry_finished_job
-- Make a failed or cancelled job available again, with one more attempt even
-- if its budget was spent; no row changed when it is not failed or cancelled,
-- or when another unfinished job holds its unique key.
UPDATE awa_jobs AS j
   SET state = 'available', run_at = statement_timestamp(), finished_at = NULL,
       max_attempts = greatest(j.max_attempts, j.attempt + 1)
 WHERE j.id = %(id)s AND j.state IN ('failed', 'cancelled')
   AND (j.unique_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM awa_jobs AS h
         WHERE h.unique_key = j.unique_key AND h.id <> j.id
           AND h.state IN ('available', 'scheduled', 'running', 'retryable')));

-- name: unique_key_holder
-- (id, unique key) of the unfinished job holding the unique key of the failed
-- or cancelled job id, if one does.
SELECT h.id, h.unique_key
  FROM awa_jobs AS j
  JOIN awa_jobs AS h
    ON h.unique_key = j.unique_key AND h.id <> j.id
   AND h.state IN ('available', 'scheduled', 'running', 'retryable')
 WHERE j.id = %(id)s AND j.state IN ('failed', 'cancelled')
 LIMIT 1;

-- name: count_prunable_jobs
-- How many finished jobs finished more than age ago.
SELECT count(*) FROM awa_jobs
 WHERE state IN ('completed', 'failed', 'cancelled') AND finished_at < clock_timestamp() - %(age)s::interval;

-- name: prune_jobs_batch
-- Delete up to limit jobs finished more than age ago, through the
-- awa_jobs_finished index: a short transaction, no long lock. Rows another
-- session holds (a worker, an operator's retry) are skipped, never waited for,
-- and the outer WHERE re-checks state and age on the row actually deleted: a
-- job retried since the batch was chosen is never deleted.
DELETE FROM awa_jobs
 WHERE id IN (SELECT id FROM awa_jobs
               WHERE state IN ('completed', 'failed', 'cancelled')
                 AND finished_at < clock_timestamp() - %(age)s::interval
               LIMIT %(limit)s
                 FOR UPDATE SKIP LOCKED)
   AND state IN ('completed', 'failed', 'cancelled') AND finished_at < clock_timestamp() - %(age)s::interval;
