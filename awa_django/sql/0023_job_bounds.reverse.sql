-- Undo 0023_job_bounds.sql.
ALTER TABLE awa_jobs
    DROP CONSTRAINT IF EXISTS awa_jobs_queue_length_check,
    DROP CONSTRAINT IF EXISTS awa_jobs_unique_key_length_check,
    DROP CONSTRAINT IF EXISTS awa_jobs_concurrency_key_length_check,
    DROP CONSTRAINT IF EXISTS awa_jobs_concurrency_limit_check;
