-- A job read back by get_result() from any process, however it was written.

-- name: job_result_by_id
-- One job's row, its timestamps loaded as in claim_jobs: a timestamp no
-- datetime can hold (raw SQL) reads as NULL, not as an error.
SELECT id, attempt, state, kind, queue, args, priority, max_attempts, errors, result,
       tags, metadata, worker_ids, unique_key, concurrency_key, concurrency_limit,
       CASE WHEN run_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN run_at END AS run_at,
       CASE WHEN created_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN created_at END AS created_at,
       CASE WHEN attempted_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN attempted_at END AS attempted_at,
       CASE WHEN started_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN started_at END AS started_at,
       CASE WHEN heartbeat_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN heartbeat_at END AS heartbeat_at,
       CASE WHEN finished_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN finished_at END AS finished_at
  FROM awa_jobs
 WHERE id = %(id)s;
