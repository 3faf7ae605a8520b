-- Undo 0009_task_outcomes.sql.
DROP FUNCTION IF EXISTS awa_release_v2(bigint, integer, interval, interval, jsonb);
DROP FUNCTION IF EXISTS awa_fail_job_v1(bigint, integer, jsonb);
DROP TRIGGER IF EXISTS awa_jobs_started_at ON awa_jobs;
DROP FUNCTION IF EXISTS awa_jobs_started_at_v1();
ALTER TABLE awa_jobs DROP CONSTRAINT IF EXISTS awa_jobs_priority_check;
