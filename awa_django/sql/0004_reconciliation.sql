-- awa_django 0004_reconciliation: owner-scoped reconciliation (ADR-007 #481).
-- Installed by migration 0004_reconciliation (which locks awa_cron_jobs first),
-- undone by 0004_reconciliation.reverse.sql. Frozen once released.

-- The protocol version this schema speaks. Every current runtime writes the
-- same number into awa_runtime_instances.cron_protocol; a fresh runtime that
-- writes anything else (an older binary writes NULL) blocks automatic
-- retirement. Must equal awa_django.reconciliation.CRON_PROTOCOL_VERSION.
CREATE FUNCTION awa_cron_protocol_version() RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT 1 $$;

-- The single serializer of the protocol: runtime snapshot writes (old writers
-- too, through the statement trigger below), declaration publication, owner
-- lifecycle operations and reconciliation. Transaction-scoped, so it can never
-- leak past a commit or a crash. Lock order everywhere: this lock, then owner
-- rows, then schedule rows by name. No job or heartbeat path takes it.
-- Key: the bytes "AWADJPRT" as a signed 64-bit integer.
CREATE FUNCTION awa_cron_protocol_lock() RETURNS void
LANGUAGE sql VOLATILE
AS $$ SELECT pg_advisory_xact_lock(4708303696999502420) $$;

CREATE FUNCTION awa_cron_lock_evidence_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM awa_cron_protocol_lock();
    RETURN NULL;
END
$$;

-- Every statement that writes evidence waits for the protocol lock, even one
-- from a writer that knows nothing of the protocol.
CREATE TRIGGER awa_cron_lock_evidence
    BEFORE INSERT OR UPDATE OR DELETE ON awa_runtime_instances
    FOR EACH STATEMENT EXECUTE FUNCTION awa_cron_lock_evidence_v1();
CREATE TRIGGER awa_cron_lock_evidence
    BEFORE INSERT OR UPDATE OR DELETE ON awa_cron_declarations
    FOR EACH STATEMENT EXECUTE FUNCTION awa_cron_lock_evidence_v1();

-- A heartbeat from a runtime that does not speak the current protocol restarts
-- every owner's grace clock. Only rows that still hold a clock are written, so
-- repeated legacy heartbeats create no dead tuples (idempotent).
CREATE FUNCTION awa_cron_unknown_runtime_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.cron_protocol IS DISTINCT FROM awa_cron_protocol_version() THEN
        UPDATE awa_cron_owners
           SET agreed_since = NULL, evidence_until = NULL
         WHERE agreed_since IS NOT NULL OR evidence_until IS NOT NULL;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER awa_cron_unknown_runtime
    BEFORE INSERT OR UPDATE ON awa_runtime_instances
    FOR EACH ROW EXECUTE FUNCTION awa_cron_unknown_runtime_v1();

-- The schedule fence. Reads two transaction-local settings that are internal,
-- not a public API (set_config(..., true) by awa_django only):
--   awa.cron_admin = 'on'  operator context (lifecycle actions, retirement)
--   awa.cron_owner = <id>  manager context (owner definition sync)
-- Rules, in order:
--   DELETE of a retired row or an owned row raises (SQLSTATE 55000).
--   Operator context: any update is allowed.
--   Changing owner_id / retired_* without operator context raises.
--   Any update of a retired row is silently suppressed (RETURN NULL): an
--     outdated fire statement without the retired guard then updates nothing,
--     so its RETURNING is empty and it inserts no job; an old sync cannot
--     rewrite a tombstone.
--   A definition change of an owned row outside its manager context is
--     suppressed; firing (last_enqueued_at), pause and the derived
--     next_fire_at stay allowed for everyone.
CREATE FUNCTION awa_cron_schedule_fence_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    operator boolean := coalesce(current_setting('awa.cron_admin', true), '') = 'on';
    manager text := coalesce(current_setting('awa.cron_owner', true), '');
    volatile_keys text[] := ARRAY['last_enqueued_at', 'next_fire_at', 'updated_at',
                                  'paused_at', 'paused_by'];
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
    IF OLD.owner_id IS NOT NULL AND manager IS DISTINCT FROM OLD.owner_id
       AND (to_jsonb(NEW) - volatile_keys) IS DISTINCT FROM (to_jsonb(OLD) - volatile_keys) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER awa_cron_schedule_fence
    BEFORE UPDATE OR DELETE ON awa_cron_jobs
    FOR EACH ROW EXECUTE FUNCTION awa_cron_schedule_fence_v1();

-- Additive sync, ownership-aware (replaces awa_cron_upsert_v1 for current
-- runtimes; v1 stays for old writers and is fenced by the trigger above).
-- Unowned active rows are upserted as before; unowned retired rows are a
-- quiet no-op; owned rows are not touched and their names are returned in
-- "conflicts" so the caller can report them.
CREATE FUNCTION awa_cron_upsert_v2(p_definitions jsonb)
RETURNS TABLE (name text, outcome text)
LANGUAGE sql VOLATILE AS $$
    WITH defs AS (
        SELECT d.*
          FROM jsonb_to_recordset(p_definitions) AS d(
                   name text, cron_expr text, timezone text, kind text, queue text,
                   args jsonb, priority integer, max_attempts integer, tags text[],
                   metadata jsonb, missed_fire_policy text)
    ), owned AS (
        SELECT c.name FROM awa_cron_jobs AS c JOIN defs USING (name)
         WHERE c.owner_id IS NOT NULL
    ), written AS (
        INSERT INTO awa_cron_jobs AS c
            (name, cron_expr, timezone, kind, queue, args, priority, max_attempts, tags,
             metadata, missed_fire_policy, created_at, updated_at)
        SELECT d.name, d.cron_expr, d.timezone, d.kind, d.queue, d.args, d.priority,
               d.max_attempts, d.tags, d.metadata, d.missed_fire_policy,
               clock_timestamp(), clock_timestamp()
          FROM defs AS d
         WHERE d.name NOT IN (SELECT owned.name FROM owned)
         ORDER BY d.name
        ON CONFLICT (name) DO UPDATE
           SET cron_expr = EXCLUDED.cron_expr, timezone = EXCLUDED.timezone,
               kind = EXCLUDED.kind, queue = EXCLUDED.queue, args = EXCLUDED.args,
               priority = EXCLUDED.priority, max_attempts = EXCLUDED.max_attempts,
               tags = EXCLUDED.tags, metadata = EXCLUDED.metadata,
               missed_fire_policy = EXCLUDED.missed_fire_policy,
               updated_at = clock_timestamp()
         WHERE c.owner_id IS NULL AND c.retired_at IS NULL
           AND (c.cron_expr, c.timezone, c.kind, c.queue, c.args, c.priority, c.max_attempts,
                c.tags, c.metadata, c.missed_fire_policy)
               IS DISTINCT FROM
               (EXCLUDED.cron_expr, EXCLUDED.timezone, EXCLUDED.kind, EXCLUDED.queue,
                EXCLUDED.args, EXCLUDED.priority, EXCLUDED.max_attempts, EXCLUDED.tags,
                EXCLUDED.metadata, EXCLUDED.missed_fire_policy)
        RETURNING c.name
    )
    SELECT written.name, 'written' FROM written
    UNION ALL
    SELECT owned.name, 'owned' FROM owned
$$;

COMMENT ON FUNCTION awa_cron_protocol_version() IS 'awa_django 0004_reconciliation';
COMMENT ON FUNCTION awa_cron_protocol_lock() IS 'awa_django 0004_reconciliation';
COMMENT ON FUNCTION awa_cron_lock_evidence_v1() IS 'awa_django 0004_reconciliation';
COMMENT ON FUNCTION awa_cron_unknown_runtime_v1() IS 'awa_django 0004_reconciliation';
COMMENT ON FUNCTION awa_cron_schedule_fence_v1() IS 'awa_django 0004_reconciliation';
COMMENT ON FUNCTION awa_cron_upsert_v2(jsonb) IS 'awa_django 0004_reconciliation';
