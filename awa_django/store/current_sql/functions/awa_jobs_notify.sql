-- awa_jobs_notify: the current version, awa_jobs_notify_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

-- Wake workers (LISTEN awa_jobs) when jobs become ready: new jobs, and queue
-- resume. One notification per statement, folded per transaction.
CREATE FUNCTION awa_jobs_notify_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('awa_jobs', '');
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION awa_jobs_notify_v1() IS 'awa_django 0003_worker';
