-- Undo 0022_drop_cron_jobs_owner_pattern_index.sql.
CREATE INDEX CONCURRENTLY IF NOT EXISTS awa_cron_jobs_owner_id_7a428d6d_like
    ON awa_cron_jobs (owner_id text_pattern_ops);
