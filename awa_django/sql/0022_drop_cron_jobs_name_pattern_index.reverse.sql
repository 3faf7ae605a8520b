-- Undo 0022_drop_cron_jobs_name_pattern_index.sql.
CREATE INDEX CONCURRENTLY IF NOT EXISTS awa_cron_jobs_name_495793d4_like
    ON awa_cron_jobs (name text_pattern_ops);
