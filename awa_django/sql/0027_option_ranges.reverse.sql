-- Undo 0027_option_ranges.sql.
ALTER TABLE awa_cron_jobs
    DROP CONSTRAINT IF EXISTS awa_cron_jobs_starting_deadline_range_check,
    DROP CONSTRAINT IF EXISTS awa_cron_jobs_jitter_range_check;
