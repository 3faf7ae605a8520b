-- awa_cron_jobs_notify: the current version, awa_cron_jobs_notify_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

-- Wake the leader (LISTEN awa_cron) when a row needs its next fire computed:
-- new schedules, definition changes, resume. Identical payloads are folded by
-- PostgreSQL into one notification per transaction.
CREATE FUNCTION awa_cron_jobs_notify_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('awa_cron', '');
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION awa_cron_jobs_notify_v1() IS 'awa_django 0002_cron_core';
