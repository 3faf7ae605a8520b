-- awa_django 0024_job_timestamps_validate: awa_jobs_timestamps_check holds for
-- the rows already stored. Installed by migration 0024_job_timestamps after
-- 0024_job_timestamps_fail.sql has failed every unfinished job that breaks it,
-- so it cannot fail on a stored row; in a transaction of its own: VALIDATE
-- takes a lock that lets enqueue and claim go on while it reads the table.
ALTER TABLE awa_jobs VALIDATE CONSTRAINT awa_jobs_timestamps_check;
