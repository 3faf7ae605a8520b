-- Undo 0002_cron_core.sql (migration 0002 backwards).
DROP FUNCTION IF EXISTS awa_cron_trigger_v1(text, text);
DROP FUNCTION IF EXISTS awa_cron_fire_v1(jsonb);
DROP FUNCTION IF EXISTS awa_cron_upsert_v1(jsonb);
DROP TRIGGER IF EXISTS awa_cron_jobs_notify ON awa_cron_jobs;
DROP FUNCTION IF EXISTS awa_cron_jobs_notify_v1();
DROP TRIGGER IF EXISTS awa_cron_jobs_invalidate ON awa_cron_jobs;
DROP FUNCTION IF EXISTS awa_cron_jobs_invalidate_v1();
DROP INDEX IF EXISTS awa_jobs_cron_slot;
DROP FUNCTION IF EXISTS awa_format_fire_at(timestamptz);
ALTER TABLE awa_jobs ALTER COLUMN tags DROP DEFAULT;
ALTER TABLE awa_cron_jobs ALTER COLUMN tags DROP DEFAULT;
