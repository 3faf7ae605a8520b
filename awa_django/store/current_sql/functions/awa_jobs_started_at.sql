-- awa_jobs_started_at: the current version, awa_jobs_started_at_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

CREATE FUNCTION awa_jobs_started_at_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.attempt = 0 THEN
        NEW.started_at := NULL;
    ELSIF NEW.started_at IS NULL THEN
        NEW.started_at := NEW.attempted_at;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION awa_jobs_started_at_v1() IS 'awa_django 0009_task_outcomes';
