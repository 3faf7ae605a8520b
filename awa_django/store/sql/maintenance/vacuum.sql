-- name: vacuum_schedules
-- A VACUUM of awa_cron_jobs that skips the table rather than wait for its lock
-- (it cannot be prepared nor run inside a transaction block).
VACUUM (SKIP_LOCKED) awa_cron_jobs;
