-- awa_cron_schedule_fence: the current version, awa_cron_schedule_fence_v4,
-- and the previous one, awa_cron_schedule_fence_v3, kept installed for processes of the
-- previous release (N-1: docs/explanation/sql-versions.md).
-- Each statement as its migration's SQL file installed it (named in its comment).

-- awa_cron_schedule_fence_v3 without printing the payload: v3 compared
-- to_jsonb(NEW) with to_jsonb(OLD) on every update of an owned row by anyone
-- but its manager (the fire statement's among them), which prints args and
-- metadata twice: seconds per fire for a megabyte of args. v4 compares the
-- row without them (and without their measures, which follow them), and a
-- second trigger, run only by a statement that writes args or metadata,
-- compares those two (TG_ARGV[0] = 'payload').
CREATE FUNCTION awa_cron_schedule_fence_v4() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    operator boolean := coalesce(current_setting('awa.cron_admin', true), '') = 'on';
    manager text := coalesce(current_setting('awa.cron_owner', true), '');
    policies boolean := coalesce(current_setting('awa.cron_policies', true), '') = 'on';
    volatile_keys text[] := ARRAY['last_enqueued_at', 'next_fire_at', 'updated_at',
                                  'paused_at', 'paused_by', 'parked_at', 'parked_reason',
                                  'args_bytes', 'args_depth', 'metadata_bytes', 'metadata_depth'];
    new_row awa_cron_jobs;
    old_row awa_cron_jobs;
BEGIN
    IF TG_ARGV[0] = 'payload' THEN
        IF NOT operator AND OLD.retired_at IS NULL AND OLD.owner_id IS NOT NULL
           AND manager IS DISTINCT FROM OLD.owner_id
           AND (NEW.args, NEW.metadata) IS DISTINCT FROM (OLD.args, OLD.metadata) THEN
            RETURN NULL;
        END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' THEN
        IF OLD.retired_at IS NOT NULL THEN
            RAISE EXCEPTION 'cron schedule % is retired; its tombstone must be retained (restore it explicitly to reactivate)', OLD.name
                USING ERRCODE = '55000';
        ELSIF OLD.owner_id IS NOT NULL THEN
            RAISE EXCEPTION 'cron schedule % has durable ownership (owner %); retire it instead of deleting', OLD.name, OLD.owner_id
                USING ERRCODE = '55000';
        END IF;
        RETURN OLD;
    END IF;
    IF operator THEN
        RETURN NEW;
    END IF;
    IF (NEW.owner_id, NEW.retired_at, NEW.retired_by, NEW.retired_revision)
       IS DISTINCT FROM (OLD.owner_id, OLD.retired_at, OLD.retired_by, OLD.retired_revision) THEN
        RAISE EXCEPTION 'cron schedule %: lifecycle changes require an explicit operator action', OLD.name
            USING ERRCODE = '55000';
    END IF;
    IF OLD.retired_at IS NOT NULL THEN
        RETURN NULL;
    END IF;
    IF NOT policies
       AND (OLD.overlap <> 'allow' OR OLD.starting_deadline IS NOT NULL OR OLD.jitter <> 0)
       AND NEW.last_enqueued_at IS NOT NULL
       AND (OLD.last_enqueued_at IS NULL OR NEW.last_enqueued_at > OLD.last_enqueued_at) THEN
        RETURN NULL;
    END IF;
    IF OLD.owner_id IS NOT NULL AND manager IS DISTINCT FROM OLD.owner_id THEN
        new_row := NEW;
        old_row := OLD;
        new_row.args := NULL;
        new_row.metadata := NULL;
        old_row.args := NULL;
        old_row.metadata := NULL;
        IF (to_jsonb(new_row) - volatile_keys) IS DISTINCT FROM (to_jsonb(old_row) - volatile_keys) THEN
            RETURN NULL;
        END IF;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION awa_cron_schedule_fence_v4() IS 'awa_django 0026_payload_measure';

-- The fence of 0008 (v2), plus: a fire (last_enqueued_at moved forward) of a
-- row with an execution policy is suppressed unless the statement firing it
-- knows the policies (awa_cron_fire_v5 says so with the transaction-local
-- setting awa.cron_policies). A leader of an earlier release, whose
-- awa_cron_fire_v3 would ignore the policies, thus fires nothing for such a
-- row; rewinding the token and operator actions are not fires.
CREATE FUNCTION awa_cron_schedule_fence_v3() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    operator boolean := coalesce(current_setting('awa.cron_admin', true), '') = 'on';
    manager text := coalesce(current_setting('awa.cron_owner', true), '');
    policies boolean := coalesce(current_setting('awa.cron_policies', true), '') = 'on';
    volatile_keys text[] := ARRAY['last_enqueued_at', 'next_fire_at', 'updated_at',
                                  'paused_at', 'paused_by', 'parked_at', 'parked_reason'];
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.retired_at IS NOT NULL THEN
            RAISE EXCEPTION 'cron schedule % is retired; its tombstone must be retained (restore it explicitly to reactivate)', OLD.name
                USING ERRCODE = '55000';
        ELSIF OLD.owner_id IS NOT NULL THEN
            RAISE EXCEPTION 'cron schedule % has durable ownership (owner %); retire it instead of deleting', OLD.name, OLD.owner_id
                USING ERRCODE = '55000';
        END IF;
        RETURN OLD;
    END IF;
    IF operator THEN
        RETURN NEW;
    END IF;
    IF (NEW.owner_id, NEW.retired_at, NEW.retired_by, NEW.retired_revision)
       IS DISTINCT FROM (OLD.owner_id, OLD.retired_at, OLD.retired_by, OLD.retired_revision) THEN
        RAISE EXCEPTION 'cron schedule %: lifecycle changes require an explicit operator action', OLD.name
            USING ERRCODE = '55000';
    END IF;
    IF OLD.retired_at IS NOT NULL THEN
        RETURN NULL;
    END IF;
    IF NOT policies
       AND (OLD.overlap <> 'allow' OR OLD.starting_deadline IS NOT NULL OR OLD.jitter <> 0)
       AND NEW.last_enqueued_at IS NOT NULL
       AND (OLD.last_enqueued_at IS NULL OR NEW.last_enqueued_at > OLD.last_enqueued_at) THEN
        RETURN NULL;
    END IF;
    IF OLD.owner_id IS NOT NULL AND manager IS DISTINCT FROM OLD.owner_id
       AND (to_jsonb(NEW) - volatile_keys) IS DISTINCT FROM (to_jsonb(OLD) - volatile_keys) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION awa_cron_schedule_fence_v3() IS 'awa_django 0018_execution_policies';
