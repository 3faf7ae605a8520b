-- Undo 0018_execution_policies.sql: the fence trigger back on v2, the rest dropped.
DROP TRIGGER awa_cron_schedule_fence ON awa_cron_jobs;
CREATE TRIGGER awa_cron_schedule_fence
    BEFORE UPDATE OR DELETE ON awa_cron_jobs
    FOR EACH ROW EXECUTE FUNCTION awa_cron_schedule_fence_v2();
DROP FUNCTION awa_cron_fire_v5(jsonb);
DROP FUNCTION awa_cron_schedule_fence_v3();
DROP FUNCTION awa_cron_jitter_v1(text, timestamptz, double precision);
DROP TABLE awa_cron_slot_counts;
DROP TABLE awa_cron_slot_outcomes;
DROP INDEX awa_jobs_cron_unfinished;
