-- awa_django 0024_job_timestamps: an unfinished job holds only timestamps a
-- Python datetime can read back and show in any time zone. Installed by
-- migration 0024_job_timestamps (not atomic) before 0024_job_timestamps_fail.sql
-- fails the stored unfinished jobs that break it and
-- 0024_job_timestamps_validate.sql checks the stored rows; undone by
-- 0024_job_timestamps.reverse.sql. Until the second file has run, a claim
-- that picks such a job fails as a whole (nothing claimed).
--
-- A job row with run_at = '-infinity' (or a year before 1 or after 9999, in
-- UTC) cannot be loaded by psycopg: a plain SELECT of it fails the whole
-- fetch, e.g. a claim's batch, leaving every job of it to rescue. The
-- range is the one enqueue accepts for run_after (a day's margin each side,
-- for time zones). Finished jobs (completed, failed, cancelled) are exempt:
-- rows stored before this check are failed, not rewritten (the operator views
-- show the stored value, flagged), and a retry, which makes a job unfinished
-- again, is checked.
ALTER TABLE awa_jobs
    ADD CONSTRAINT awa_jobs_timestamps_check CHECK (
        state IN ('completed', 'failed', 'cancelled')
        OR (run_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00'
            AND created_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00'
            AND (attempted_at IS NULL
                 OR attempted_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00')
            AND (started_at IS NULL
                 OR started_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00')
            AND (heartbeat_at IS NULL
                 OR heartbeat_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00')
            AND (finished_at IS NULL
                 OR finished_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00'))
    ) NOT VALID;
