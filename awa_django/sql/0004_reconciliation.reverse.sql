-- Undo 0004_reconciliation.sql (migration 0004 backwards).
DROP FUNCTION IF EXISTS awa_cron_upsert_v2(jsonb);
DROP TRIGGER IF EXISTS awa_cron_schedule_fence ON awa_cron_jobs;
DROP FUNCTION IF EXISTS awa_cron_schedule_fence_v1();
DROP TRIGGER IF EXISTS awa_cron_unknown_runtime ON awa_runtime_instances;
DROP FUNCTION IF EXISTS awa_cron_unknown_runtime_v1();
DROP TRIGGER IF EXISTS awa_cron_lock_evidence ON awa_cron_declarations;
DROP TRIGGER IF EXISTS awa_cron_lock_evidence ON awa_runtime_instances;
DROP FUNCTION IF EXISTS awa_cron_lock_evidence_v1();
DROP FUNCTION IF EXISTS awa_cron_protocol_lock();
DROP FUNCTION IF EXISTS awa_cron_protocol_version();
