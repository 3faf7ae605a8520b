-- name: metrics_database_gauges
-- Every database gauge in one statement: (kind, label 1, label 2, value). Its
-- arms read the tables in the lock order of awa_django.db.lock_order
-- (PostgreSQL locks them as it parses the statement, arm by arm), so a
-- migration holding some of them never waits for it while it waits for the
-- migration. Each arm is cheap: awa_cron_jobs is small and indexed on
-- next_fire_at, runtime rows are few; the jobs arm is one aggregate over
-- awa_jobs, which pruning keeps bounded (AWA_JOB_RETENTION), and the statement
-- timeout bounds it anyway.
SELECT 'runtimes', role, CASE WHEN leader THEN 'leader' ELSE '' END, count(*)::float8
  FROM awa_runtime_instances
 WHERE NOT shutting_down
   AND last_seen_at + make_interval(secs => GREATEST(30.0, snapshot_interval_ms * 0.003))
       > clock_timestamp()
 GROUP BY 2, 3
UNION ALL
SELECT 'schedules',
       CASE WHEN retired_at IS NOT NULL THEN 'retired'
            WHEN paused_at IS NOT NULL THEN 'paused' ELSE 'active' END,
       '', count(*)::float8
  FROM awa_cron_jobs GROUP BY 2
UNION ALL
SELECT 'due', '', '', count(*)::float8 FROM awa_cron_jobs
 WHERE paused_at IS NULL AND retired_at IS NULL
   AND (next_fire_at <= statement_timestamp() OR next_fire_at IS NULL)
UNION ALL
SELECT 'due_age', '', '',
       COALESCE(EXTRACT(EPOCH FROM statement_timestamp() - min(next_fire_at)), 0)::float8
  FROM awa_cron_jobs
 WHERE paused_at IS NULL AND retired_at IS NULL AND next_fire_at <= statement_timestamp()
UNION ALL
SELECT 'parked', '', '', count(*)::float8 FROM awa_cron_jobs
 WHERE paused_at IS NULL AND retired_at IS NULL AND next_fire_at >= '9999-12-31T00:00:00+00:00'
UNION ALL
SELECT 'jobs', queue, state, count(*)::float8 FROM awa_jobs GROUP BY queue, state
UNION ALL
SELECT 'skipped', reason, '', sum(count)::float8 FROM awa_cron_slot_counts GROUP BY reason;

-- name: session_statement_timeout
-- This session's statement_timeout, to set it back after a transaction-local
-- change on a connection Django keeps (a web request's).
SELECT current_setting('statement_timeout');
