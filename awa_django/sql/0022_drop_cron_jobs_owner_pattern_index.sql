-- awa_django 0022_drop_cron_jobs_owner_pattern_index: the text_pattern_ops index
-- Django made for awa_cron_jobs.owner_id, beside awa_cron_jobs_owner_id_7a428d6d,
-- goes, for the reasons 0022_drop_cron_jobs_name_pattern_index.sql gives.
-- Installed by migration 0022_drop_cron_jobs_pattern_indexes (not atomic),
-- undone by 0022_drop_cron_jobs_owner_pattern_index.reverse.sql.
DROP INDEX CONCURRENTLY IF EXISTS awa_cron_jobs_owner_id_7a428d6d_like;
