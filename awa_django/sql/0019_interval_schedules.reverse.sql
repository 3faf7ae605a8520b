-- Undo 0019_interval_schedules.sql: the invalidation trigger back on v1.
DROP TRIGGER awa_cron_jobs_invalidate ON awa_cron_jobs;
CREATE TRIGGER awa_cron_jobs_invalidate
    BEFORE INSERT OR UPDATE ON awa_cron_jobs
    FOR EACH ROW EXECUTE FUNCTION awa_cron_jobs_invalidate_v1();
DROP FUNCTION awa_cron_fire_v6(jsonb);
DROP FUNCTION awa_cron_jobs_invalidate_v2();
