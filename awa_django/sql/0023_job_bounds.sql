-- awa_django 0023_job_bounds: a job row holds only what enqueue accepts. Installed
-- by migration 0023_job_bounds (not atomic: this file adds the checks, briefly
-- locking awa_jobs, and 0023_job_bounds_validate.sql checks the rows already
-- stored in a transaction of its own that blocks no writer), undone by
-- 0023_job_bounds.reverse.sql.
--
-- Enqueue validates every one of these, but a row written by hand or by another
-- client must not stop every worker: a queue or key too long for a btree entry
-- fails the claim that indexes it (and with it the whole claim, for every job),
-- and a concurrency limit below 1 keeps its job waiting for good (a burst worker
-- never finishes). Lengths in characters: 200 for a queue as enqueue allows, 500
-- for a key; at most 4 bytes each, well under a btree entry's 2,700.
ALTER TABLE awa_jobs
    ADD CONSTRAINT awa_jobs_queue_length_check
        CHECK (char_length(queue) BETWEEN 1 AND 200) NOT VALID,
    ADD CONSTRAINT awa_jobs_unique_key_length_check
        CHECK (char_length(unique_key) BETWEEN 1 AND 500) NOT VALID,
    ADD CONSTRAINT awa_jobs_concurrency_key_length_check
        CHECK (char_length(concurrency_key) BETWEEN 1 AND 500) NOT VALID,
    ADD CONSTRAINT awa_jobs_concurrency_limit_check
        CHECK (concurrency_limit BETWEEN 1 AND 1000000) NOT VALID;
