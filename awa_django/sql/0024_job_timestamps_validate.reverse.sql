-- Undo 0024_job_timestamps_validate.sql: nothing to undo
-- (0024_job_timestamps.reverse.sql drops the check).
SELECT 1;
