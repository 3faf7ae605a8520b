-- The claim: up to a limit of ready jobs, one new attempt each, in one statement.
-- Each row comes back whole. A timestamp no Python datetime can hold (written by
-- raw SQL: '-infinity', year 10000) reads as NULL, and invalid_timestamps says
-- what each such column holds ("run_at -infinity, ..."), else NULL: psycopg would
-- fail to load the value, and with it every row fetched. The range is
-- awa_django.db.timestamps.TIMESTAMP_LOW/HIGH, the columns JOB_TIMESTAMPS (a test
-- compares them with this text).

-- name: claim_jobs
-- Claim up to limit ready jobs of queues (NULL: every queue) for worker_id,
-- passing over concurrency keys and queues without room under limits (JSON,
-- NULL without queue limits).
SELECT /*@job_row_columns*/,
       /*@job_invalid_timestamps_text*/ AS invalid_timestamps
  FROM awa_claim_v3(%(queues)s, %(limit)s, %(worker_id)s, %(limits)s::jsonb);

-- name: complete_and_claim_jobs
-- Complete a batch of attempts (fenced: a stale one is neither completed nor
-- returned) and claim up to limit ready jobs, in one statement. A claimed row
-- (state 'running') comes back whole, timestamps as in claim_jobs; a completed
-- row with only what its completion changed (id, attempt, state, finished_at):
-- its other columns are the claimed row's, which the worker already holds, and
-- NULLs cost nothing to load. The column order is fixed: the store reads the
-- first four columns of a completed row by position.
SELECT id, attempt, state,
       CASE WHEN finished_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN finished_at END AS finished_at,
       CASE WHEN state = 'running' THEN kind END AS kind,
       CASE WHEN state = 'running' THEN queue END AS queue,
       CASE WHEN state = 'running' THEN args END AS args,
       CASE WHEN state = 'running' THEN priority END AS priority,
       CASE WHEN state = 'running' THEN max_attempts END AS max_attempts,
       CASE WHEN state = 'running' AND run_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN run_at END AS run_at,
       CASE WHEN state = 'running' AND created_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN created_at END AS created_at,
       CASE WHEN state = 'running' AND attempted_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN attempted_at END AS attempted_at,
       CASE WHEN state = 'running' AND heartbeat_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN heartbeat_at END AS heartbeat_at,
       CASE WHEN state = 'running' THEN errors END AS errors,
       CASE WHEN state = 'running' THEN result END AS result,
       CASE WHEN state = 'running' THEN tags END AS tags,
       CASE WHEN state = 'running' THEN metadata END AS metadata,
       CASE WHEN state = 'running' THEN worker_ids END AS worker_ids,
       CASE WHEN state = 'running' AND started_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00' THEN started_at END AS started_at,
       CASE WHEN state = 'running' THEN unique_key END AS unique_key,
       CASE WHEN state = 'running' THEN concurrency_key END AS concurrency_key,
       CASE WHEN state = 'running' THEN concurrency_limit END AS concurrency_limit,
       CASE WHEN state = 'running' THEN /*@job_invalid_timestamps_text*/ END AS invalid_timestamps
  FROM awa_complete_claim_v3(%(ids)s::bigint[], %(attempts)s::integer[], %(results)s::jsonb[],
                             %(queues)s::text[], %(limit)s, %(worker_id)s, %(limits)s::jsonb);

-- name: jobs_held_back
-- Whether a ready job in queues (NULL: every queue) waits only for flow
-- control: it has a concurrency key, or its queue is one of the limited ones.
SELECT EXISTS (
       SELECT 1 FROM awa_jobs AS j
        WHERE j.state IN ('available', 'scheduled', 'retryable')
          AND j.run_at <= clock_timestamp()
          AND (%(queues)s::text[] IS NULL OR j.queue = ANY (%(queues)s::text[]))
          AND (j.concurrency_key IS NOT NULL OR j.queue = ANY (%(limited)s::text[]))
          AND NOT EXISTS (SELECT 1 FROM awa_queue_meta AS q
                           WHERE q.queue = j.queue AND q.paused_at IS NOT NULL));
