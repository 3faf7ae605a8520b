-- Undo 0008_parked_rows.sql: the fence trigger back on v1, v2/v3 dropped.
DROP TRIGGER awa_cron_schedule_fence ON awa_cron_jobs;
CREATE TRIGGER awa_cron_schedule_fence
    BEFORE UPDATE OR DELETE ON awa_cron_jobs
    FOR EACH ROW EXECUTE FUNCTION awa_cron_schedule_fence_v1();
DROP FUNCTION awa_cron_fire_v3(jsonb);
DROP FUNCTION awa_cron_schedule_fence_v2();
