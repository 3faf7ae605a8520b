-- Undo 0003_worker.sql (migration 0003 backwards).
DROP FUNCTION IF EXISTS awa_rescue_v1(interval);
DROP FUNCTION IF EXISTS awa_heartbeat_v1(bigint[], integer[]);
DROP FUNCTION IF EXISTS awa_fail_v1(bigint, integer, jsonb, timestamptz);
DROP FUNCTION IF EXISTS awa_complete_v1(bigint, integer, jsonb);
DROP FUNCTION IF EXISTS awa_claim_v1(text[], integer, text);
DROP TRIGGER IF EXISTS awa_queue_meta_notify ON awa_queue_meta;
DROP TRIGGER IF EXISTS awa_jobs_notify ON awa_jobs;
DROP FUNCTION IF EXISTS awa_jobs_notify_v1();
DROP INDEX IF EXISTS awa_jobs_cron_name;
ALTER TABLE awa_jobs ALTER COLUMN worker_ids DROP DEFAULT;
