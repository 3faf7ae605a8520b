-- Undo 0016_fire_job_metadata.sql.
DROP FUNCTION IF EXISTS awa_cron_fire_v4(jsonb);
