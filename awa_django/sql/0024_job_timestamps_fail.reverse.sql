-- Undo 0024_job_timestamps_fail.sql: nothing to undo (a failed job stays failed).
SELECT 1;
