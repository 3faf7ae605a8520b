-- awa_django 0023_job_bounds_validate: the checks of 0023_job_bounds.sql hold for
-- the rows already stored. Installed by migration 0023_job_bounds after that
-- file, in a transaction of its own: VALIDATE takes a lock that lets enqueue and
-- claim go on while it reads the table. A row written by hand that breaks one
-- fails the migration naming the check; fix or delete the row and migrate again.
ALTER TABLE awa_jobs VALIDATE CONSTRAINT awa_jobs_queue_length_check;
ALTER TABLE awa_jobs VALIDATE CONSTRAINT awa_jobs_unique_key_length_check;
ALTER TABLE awa_jobs VALIDATE CONSTRAINT awa_jobs_concurrency_key_length_check;
ALTER TABLE awa_jobs VALIDATE CONSTRAINT awa_jobs_concurrency_limit_check;
