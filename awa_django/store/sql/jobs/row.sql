-- The parts of a job's row that several statements read alike.

-- fragment: job_row_columns
-- Every column of a job, its timestamps loaded safely: a timestamp no Python
-- datetime can hold (written by raw SQL: '-infinity', year 10000) reads as NULL
-- (psycopg would fail to load it, and with it every row fetched). The range is
-- awa_django.db.timestamps.TIMESTAMP_LOW/HIGH, the columns JOB_TIMESTAMPS (a test
-- compares them with this text).
id, attempt, state, kind, queue, args, priority, max_attempts, errors, result,
       tags, metadata, worker_ids, unique_key, concurrency_key, concurrency_limit,
       CASE WHEN run_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN run_at END AS run_at,
       CASE WHEN created_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN created_at END AS created_at,
       CASE WHEN attempted_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN attempted_at END AS attempted_at,
       CASE WHEN started_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN started_at END AS started_at,
       CASE WHEN heartbeat_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN heartbeat_at END AS heartbeat_at,
       CASE WHEN finished_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN finished_at END AS finished_at

-- fragment: job_invalid_timestamps_text
-- What makes a job's row unloadable ("run_at -infinity, ..."), NULL when every
-- timestamp loads.
NULLIF(concat_ws(', ',
           CASE WHEN NOT run_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN 'run_at ' || run_at::text END,
           CASE WHEN NOT created_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN 'created_at ' || created_at::text END,
           CASE WHEN NOT attempted_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN 'attempted_at ' || attempted_at::text END,
           CASE WHEN NOT started_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN 'started_at ' || started_at::text END,
           CASE WHEN NOT heartbeat_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN 'heartbeat_at ' || heartbeat_at::text END,
           CASE WHEN NOT finished_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN 'finished_at ' || finished_at::text END), '')
