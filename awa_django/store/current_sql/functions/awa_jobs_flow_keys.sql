-- awa_jobs_flow_keys: the current version, awa_jobs_flow_keys_v2,
-- and the previous one, awa_jobs_flow_keys_v1, kept installed for processes of the
-- previous release (N-1: docs/explanation/sql-versions.md).
-- Each statement as its migration's SQL file installed it (named in its comment).

-- awa_jobs_flow_keys_v1 with keys rendered by awa_flow_key_v1.
CREATE FUNCTION awa_jobs_flow_keys_v2() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    flow jsonb := NEW.metadata -> 'awa_flow';
    cron_name text := coalesce(NEW.metadata ->> 'cron_name', '');
    slot text := coalesce(NEW.metadata ->> 'cron_fire_at', 'manual:' || NEW.id);
BEGIN
    IF jsonb_typeof(flow) = 'object' THEN
        IF NEW.unique_key IS NULL AND jsonb_typeof(flow -> 'unique_key') = 'string' THEN
            NEW.unique_key := awa_flow_key_v1(flow ->> 'unique_key', cron_name, slot);
        END IF;
        IF NEW.concurrency_key IS NULL AND jsonb_typeof(flow -> 'concurrency_key') = 'string' THEN
            NEW.concurrency_key := awa_flow_key_v1(flow ->> 'concurrency_key', cron_name, slot);
            NEW.concurrency_limit := CASE WHEN NEW.concurrency_key IS NULL THEN NEW.concurrency_limit
                WHEN jsonb_typeof(flow -> 'concurrency_limit') = 'number'
                THEN least(greatest((flow ->> 'concurrency_limit')::numeric, 1), 1000000)::integer
                ELSE 1 END;
        END IF;
    END IF;
    NEW.metadata := NEW.metadata - 'awa_flow';
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION awa_jobs_flow_keys_v2() IS 'awa_django 0026_payload_measure';

-- A schedule's flow-control options (its metadata's "awa_flow", see
-- awa_django/declarations/flow.py) rendered into the fired job's columns:
-- {name} is the schedule's name, {slot} the fire's slot (cron_fire_at), or
-- 'manual:<job id>' for an operator's trigger. Bounded, whatever a
-- hand-written schedule row holds: keys cut to 500 characters, the limit
-- brought into 1-1000000. The options are taken out of the job's metadata.
CREATE FUNCTION awa_jobs_flow_keys_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    flow jsonb := NEW.metadata -> 'awa_flow';
    cron_name text := coalesce(NEW.metadata ->> 'cron_name', '');
    slot text := coalesce(NEW.metadata ->> 'cron_fire_at', 'manual:' || NEW.id);
BEGIN
    IF jsonb_typeof(flow) = 'object' THEN
        IF NEW.unique_key IS NULL AND jsonb_typeof(flow -> 'unique_key') = 'string' THEN
            NEW.unique_key := left(replace(replace(flow ->> 'unique_key', '{name}', cron_name),
                                           '{slot}', slot), 500);
        END IF;
        IF NEW.concurrency_key IS NULL AND jsonb_typeof(flow -> 'concurrency_key') = 'string' THEN
            NEW.concurrency_key := left(replace(replace(flow ->> 'concurrency_key', '{name}', cron_name),
                                                '{slot}', slot), 500);
            NEW.concurrency_limit := CASE WHEN jsonb_typeof(flow -> 'concurrency_limit') = 'number'
                THEN least(greatest((flow ->> 'concurrency_limit')::numeric, 1), 1000000)::integer
                ELSE 1 END;
        END IF;
    END IF;
    NEW.metadata := NEW.metadata - 'awa_flow';
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION awa_jobs_flow_keys_v1() IS 'awa_django 0017_flow_control';
