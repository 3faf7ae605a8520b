-- Undo 0024_job_timestamps.sql.
ALTER TABLE awa_jobs DROP CONSTRAINT IF EXISTS awa_jobs_timestamps_check;
