-- What a worker reports on its attempts. Every report is fenced by
-- (id, attempt, state = 'running') inside the function it calls: a late report
-- from an attempt that was rescued (its worker presumed dead) changes nothing
-- and comes back as NULL or absent. The errors bounds (max_bytes, max_depth) are
-- AWA_MAX_ARGS_BYTES and AWA_MAX_JSON_DEPTH: awa_errors_append_v1 keeps a job's
-- errors within them.

-- name: complete_jobs
-- Complete a batch of attempts (parallel arrays); the rows completed.
SELECT * FROM awa_complete_many_v1(%(ids)s::bigint[], %(attempts)s::integer[], %(results)s::jsonb[]);

-- name: completed_jobs
-- The rows of the given attempts already completed by exactly these attempts
-- (after a report whose connection broke: which part of it did commit).
SELECT j.*
  FROM awa_jobs AS j
  JOIN unnest(%(ids)s::bigint[], %(attempts)s::integer[]) AS d(id, attempt)
    ON j.id = d.id AND j.attempt = d.attempt
 WHERE j.state = 'completed';

-- name: fail_attempt
-- Record a failed attempt: 'retryable' (again after retry_in) or 'failed';
-- NULL when stale.
SELECT awa_fail_v2(%(id)s, %(attempt)s, %(error)s::jsonb, clock_timestamp() + %(retry_in)s,
                   %(max_bytes)s, %(max_depth)s);

-- name: fail_job_for_good
-- Fail the job whatever attempts remain: 'failed', or NULL when stale.
SELECT awa_fail_job_v2(%(id)s, %(attempt)s, %(error)s::jsonb, %(max_bytes)s, %(max_depth)s);

-- name: release_attempt
-- Hand an attempt back uncounted after delay (or fail the job once older than
-- give_up_after): the new state, NULL when stale.
SELECT awa_release_v3(%(id)s, %(attempt)s, %(delay)s, %(give_up_after)s, %(error)s::jsonb,
                      %(max_bytes)s, %(max_depth)s);

-- name: job_attempt_state
-- The state of a job if its latest attempt is the given one (no row otherwise).
SELECT state FROM awa_jobs WHERE id = %(id)s AND attempt = %(attempt)s;

-- name: job_by_id
-- One job's whole row.
SELECT * FROM awa_jobs WHERE id = %(id)s;

-- name: heartbeat_attempts
-- Stamp the running attempts (parallel arrays) in one statement; how many were stamped.
SELECT awa_heartbeat_v1(%(ids)s::bigint[], %(attempts)s::integer[]);

-- name: rescue_stale_attempts
-- Return to the queue (or fail) attempts not heartbeated for stale_after; their rows.
SELECT * FROM awa_rescue_v2(%(stale_after)s, %(max_bytes)s, %(max_depth)s);
