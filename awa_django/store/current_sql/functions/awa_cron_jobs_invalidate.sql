-- awa_cron_jobs_invalidate: the current version, awa_cron_jobs_invalidate_v2,
-- and the previous one, awa_cron_jobs_invalidate_v1, kept installed for processes of the
-- previous release (N-1: docs/explanation/sql-versions.md).
-- Each statement as its migration's SQL file installed it (named in its comment).

-- next_fire_at is derived state (see awa_cron_jobs_invalidate_v1); an
-- interval's every_seconds and anchor are inputs of it too.
CREATE FUNCTION awa_cron_jobs_invalidate_v2() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.next_fire_at := NULL;
    ELSIF NEW.next_fire_at IS NOT DISTINCT FROM OLD.next_fire_at
      AND (NEW.cron_expr, NEW.every_seconds, NEW.anchor, NEW.timezone, NEW.missed_fire_policy,
           NEW.last_enqueued_at, NEW.created_at, NEW.paused_at, NEW.retired_at)
          IS DISTINCT FROM
          (OLD.cron_expr, OLD.every_seconds, OLD.anchor, OLD.timezone, OLD.missed_fire_policy,
           OLD.last_enqueued_at, OLD.created_at, OLD.paused_at, OLD.retired_at) THEN
        NEW.next_fire_at := NULL;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION awa_cron_jobs_invalidate_v2() IS 'awa_django 0019_interval_schedules';

-- next_fire_at is derived state. Any change to what it depends on resets it to
-- NULL ("compute me"), unless the same statement sets it (the leader's fire
-- statement writes last_enqueued_at and the new next_fire_at together). Doing
-- this in a trigger means no writer (ORM .update(), raw SQL, an admin) can
-- leave a stale value behind.
CREATE FUNCTION awa_cron_jobs_invalidate_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.next_fire_at := NULL;
    ELSIF NEW.next_fire_at IS NOT DISTINCT FROM OLD.next_fire_at
      AND (NEW.cron_expr, NEW.timezone, NEW.missed_fire_policy, NEW.last_enqueued_at,
           NEW.created_at, NEW.paused_at, NEW.retired_at)
          IS DISTINCT FROM
          (OLD.cron_expr, OLD.timezone, OLD.missed_fire_policy, OLD.last_enqueued_at,
           OLD.created_at, OLD.paused_at, OLD.retired_at) THEN
        NEW.next_fire_at := NULL;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION awa_cron_jobs_invalidate_v1() IS 'awa_django 0002_cron_core';
