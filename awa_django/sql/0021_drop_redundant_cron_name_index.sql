-- awa_django 0021_drop_redundant_cron_name_index: awa_jobs_cron_name goes.
-- Installed by migration 0021_drop_redundant_cron_name_index (not atomic: the
-- index is dropped CONCURRENTLY, so enqueue and claim never wait on it), undone
-- by 0021_drop_redundant_cron_name_index.reverse.sql.
--
-- awa_jobs_cron_name_id ((metadata ->> 'cron_name'), id DESC), same predicate,
-- serves every lookup awa_jobs_cron_name served (its first column is the whole
-- of the other), while every job a schedule fires paid for both on its insert
-- and on each update that is not HOT (claim, completion).
DROP INDEX CONCURRENTLY IF EXISTS awa_jobs_cron_name;
