-- A job read back by get_result() from any process, however it was written.

-- name: job_result_by_id
-- One job's row, its timestamps loaded as in claim_jobs: a timestamp no
-- datetime can hold (raw SQL) reads as NULL, not as an error.
SELECT /*@job_row_columns*/
  FROM awa_jobs
 WHERE id = %(id)s;

-- name: job_invalid_timestamps
-- What makes a job's row unloadable ("run_at -infinity, ..."), as in claim_jobs:
-- NULL when every timestamp loads; no row when there is no such job.
SELECT /*@job_invalid_timestamps_text*/ AS invalid_timestamps
  FROM awa_jobs
 WHERE id = %(id)s;

-- name: job_state
-- One job's state (no row when there is no such job).
SELECT state FROM awa_jobs WHERE id = %(id)s;
