-- Undo 0023_job_bounds_validate.sql: nothing to undo (0023_job_bounds.reverse.sql
-- drops the checks).
SELECT 1;
