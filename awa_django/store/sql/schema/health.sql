-- name: health_live_processes
-- The runtime rows whose snapshot thread is alive: it wrote within two
-- snapshot intervals (plus 5 s of slack for a busy database). Tighter than
-- reconciliation's freshness on purpose: the row of a process that died (say,
-- before a container restart on the same host) must stop counting quickly, or
-- it would fail the probe of its successor. A frozen process (SIGSTOP, swapped
-- out) stops writing too. Each row: seconds since its last pass (since start
-- before the first), the most that may be (the larger of the given
-- AWA_HEALTH_MAX_PASS_AGE and three snapshot intervals), no pass yet.
SELECT hostname, pid, role, leader,
       EXTRACT(EPOCH FROM clock_timestamp() - COALESCE(last_pass_at, started_at))::float8,
       GREATEST(%(max_pass_age)s, snapshot_interval_ms * 0.003)::float8,
       last_pass_at IS NULL
  FROM awa_runtime_instances
 WHERE NOT shutting_down
   AND last_seen_at > clock_timestamp() - make_interval(secs => snapshot_interval_ms * 0.002 + 5)
 ORDER BY started_at DESC;

-- name: health_overdue_schedules
-- Active schedules whose next fire is late by more than the threshold, with
-- how late (seconds), at most 11; parked rows (year 9999) are reported by
-- cron.invalid, not here.
SELECT name, EXTRACT(EPOCH FROM statement_timestamp() - next_fire_at)::float8
  FROM awa_cron_jobs
 WHERE paused_at IS NULL AND retired_at IS NULL
   AND next_fire_at < statement_timestamp() - make_interval(secs => %(overdue_after)s)
 ORDER BY next_fire_at, name
 LIMIT 11;

-- name: health_policy_gap
-- Active schedules with an execution policy (counted on each row), and the
-- live runcron processes whose fire statement predates the policies (older
-- than the version given): they fire none of them, the schedule fence refuses
-- it. Same liveness as health_live_processes.
SELECT (SELECT count(*) FROM awa_cron_jobs
         WHERE paused_at IS NULL AND retired_at IS NULL
           AND (overlap <> 'allow' OR starting_deadline IS NOT NULL OR jitter <> 0)),
       hostname, pid, leader
  FROM awa_runtime_instances
 WHERE role = 'runcron' AND NOT shutting_down
   AND coalesce(cron_fire_version, 0) < %(version)s
   AND last_seen_at > clock_timestamp() - make_interval(secs => snapshot_interval_ms * 0.002 + 5)
 ORDER BY leader DESC, started_at DESC;

-- name: health_record_progress
-- Written in the snapshot transaction: the database clock minus how long ago
-- the process made progress, so hosts with skewed clocks still agree.
UPDATE awa_runtime_instances
   SET last_pass_at = clock_timestamp() - make_interval(secs => %(age)s)
 WHERE instance_id = %(instance_id)s;
