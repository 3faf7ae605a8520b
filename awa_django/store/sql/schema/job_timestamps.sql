-- name: count_unfinished_jobs_out_of_timestamp_range
-- How many unfinished jobs hold a timestamp out of the range a Python datetime
-- holds (awa_jobs_timestamps_check's range, from 0001-01-02 to 9999-12-30), at
-- most the cap given: only a database missing the check can hold one. The
-- columns are db.timestamps.JOB_TIMESTAMPS, the bounds its TIMESTAMP_LOW and
-- TIMESTAMP_HIGH; a unit test compares them.
SELECT count(*) FROM (
    SELECT 1 FROM awa_jobs
     WHERE state NOT IN ('completed', 'failed', 'cancelled')
       AND (NOT coalesce(run_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00', TRUE)
    OR NOT coalesce(created_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00', TRUE)
    OR NOT coalesce(attempted_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00', TRUE)
    OR NOT coalesce(started_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00', TRUE)
    OR NOT coalesce(heartbeat_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00', TRUE)
    OR NOT coalesce(finished_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00', TRUE))
     LIMIT %(cap)s) AS j;
