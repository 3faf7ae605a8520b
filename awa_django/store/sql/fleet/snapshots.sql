-- name: take_protocol_lock
-- The protocol lock (a transaction-scoped advisory lock): every writer of
-- owners, declarations, snapshots or ownership takes it first.
SELECT awa_cron_protocol_lock();

-- name: upsert_runtime_snapshot
-- This process's runtime snapshot, inserted or refreshed (database time).
INSERT INTO awa_runtime_instances
    (instance_id, hostname, pid, version, role, started_at, last_seen_at,
     snapshot_interval_ms, leader, queues, shutting_down, cron_protocol, cron_fire_version)
VALUES (%(instance_id)s, %(hostname)s, %(pid)s, %(version)s, %(role)s, clock_timestamp(), clock_timestamp(),
        %(interval_ms)s, %(leader)s, %(queues)s::jsonb, %(shutting_down)s, %(cron_protocol)s, %(fire_version)s)
ON CONFLICT (instance_id) DO UPDATE
   SET last_seen_at = clock_timestamp(), snapshot_interval_ms = EXCLUDED.snapshot_interval_ms,
       leader = EXCLUDED.leader, queues = EXCLUDED.queues,
       shutting_down = EXCLUDED.shutting_down, cron_protocol = EXCLUDED.cron_protocol,
       cron_fire_version = EXCLUDED.cron_fire_version;

-- name: delete_stale_snapshots
-- Snapshots (and, by cascade, declarations) not seen for the given seconds.
DELETE FROM awa_runtime_instances
 WHERE last_seen_at < clock_timestamp() - make_interval(secs => %(seconds)s::float8);

-- name: live_leader_snapshot
-- The runcron leader whose snapshot is fresh, if any: fresh means seen within
-- max(30 s, 3 x its snapshot interval), the rule reconciliation uses.
SELECT r.hostname, r.pid, r.last_seen_at
  FROM awa_runtime_instances AS r
 WHERE r.leader AND NOT r.shutting_down
   AND r.last_seen_at + make_interval(secs => GREATEST(30.0, r.snapshot_interval_ms * 0.003)) > statement_timestamp()
 ORDER BY r.last_seen_at DESC
 LIMIT 1;
