-- Undo 0021_drop_redundant_cron_name_index.sql.
CREATE INDEX CONCURRENTLY IF NOT EXISTS awa_jobs_cron_name ON awa_jobs ((metadata ->> 'cron_name'))
    WHERE metadata ? 'cron_name';
