-- awa_django 0008_parked_rows: a schedule row the evaluator cannot handle is
-- parked, alone, with its reason, instead of failing the pass of every row.
-- Installed by migration 0008_parked_rows (after the parked_at/parked_reason
-- columns exist), undone by 0008_parked_rows.reverse.sql.

-- The fence of 0004, with the parked columns treated like next_fire_at:
-- derived state the leader writes on any row, owned or not. Without this an
-- owned row could never be parked (the update would be suppressed) and would
-- be re-read on every pass. v1 stays installed; only the trigger moves.
CREATE FUNCTION awa_cron_schedule_fence_v2() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    operator boolean := coalesce(current_setting('awa.cron_admin', true), '') = 'on';
    manager text := coalesce(current_setting('awa.cron_owner', true), '');
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
    IF OLD.owner_id IS NOT NULL AND manager IS DISTINCT FROM OLD.owner_id
       AND (to_jsonb(NEW) - volatile_keys) IS DISTINCT FROM (to_jsonb(OLD) - volatile_keys) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END
$$;

DROP TRIGGER awa_cron_schedule_fence ON awa_cron_jobs;
CREATE TRIGGER awa_cron_schedule_fence
    BEFORE UPDATE OR DELETE ON awa_cron_jobs
    FOR EACH ROW EXECUTE FUNCTION awa_cron_schedule_fence_v2();

-- awa_cron_fire_v2 plus parking, and locked rows skipped. Each plan entry either fires (as in v2, and
-- clears a previous parking) or parks the row: "park" holds the reason, and
-- the row gets next_fire_at = 9999-12-31 (not re-read every pass) and keeps
-- parked_at from its first parking. A parked entry's guard compares the
-- timestamps as the text the evaluator read (they may be 'infinity', which no
-- Python datetime represents). Python validated every value the statement
-- uses before building the plan, so one bad row cannot fail the statement.
-- p_plan: [{"name", "prev", "created_at", "prev_text", "created_text",
--           "cron_expr", "timezone", "missed_fire_policy", "fires",
--           "next_fire_at", "park"}]
CREATE FUNCTION awa_cron_fire_v3(p_plan jsonb) RETURNS SETOF awa_jobs
LANGUAGE sql VOLATILE AS $$
    WITH plan AS (
        SELECT p.*
          FROM jsonb_to_recordset(p_plan) AS p(
                   name text, prev timestamptz, created_at timestamptz, prev_text text,
                   created_text text, cron_expr text, timezone text,
                   missed_fire_policy text, fires timestamptz[], next_fire_at timestamptz,
                   park text)
    ), locked AS (
        -- Lock order of every writer: schedule rows by name. A row another
        -- session holds (an operator action, a peer frozen inside its
        -- snapshot transaction) is skipped, not waited for: it stays due and
        -- fires at a later pass, and the other rows fire now.
        SELECT c.name
          FROM awa_cron_jobs AS c
         WHERE c.name IN (SELECT plan.name FROM plan)
         ORDER BY c.name
           FOR UPDATE SKIP LOCKED
    ), mark AS (
        UPDATE awa_cron_jobs AS c
           SET last_enqueued_at = CASE WHEN p.park IS NULL
                                       THEN COALESCE(p.fires[cardinality(p.fires)], c.last_enqueued_at)
                                       ELSE c.last_enqueued_at END,
               next_fire_at = CASE WHEN p.park IS NULL THEN p.next_fire_at
                                   ELSE '9999-12-31T00:00:00+00:00' END,
               updated_at = CASE WHEN p.park IS NULL AND cardinality(p.fires) > 0
                                 THEN clock_timestamp() ELSE c.updated_at END,
               parked_at = CASE WHEN p.park IS NULL THEN NULL
                                ELSE COALESCE(c.parked_at, clock_timestamp()) END,
               parked_reason = p.park
          FROM plan AS p, locked AS l
         WHERE c.name = p.name
           AND l.name = p.name
           AND c.paused_at IS NULL
           AND c.retired_at IS NULL
           AND c.cron_expr = p.cron_expr
           AND c.timezone = p.timezone
           AND c.missed_fire_policy = p.missed_fire_policy
           -- The compare-and-swap (see awa_cron_fire_v1), typed for a fire,
           -- on the text read for a parking.
           AND CASE WHEN p.park IS NULL
                    THEN c.last_enqueued_at IS NOT DISTINCT FROM p.prev
                         AND c.created_at = p.created_at
                    ELSE c.last_enqueued_at::text IS NOT DISTINCT FROM p.prev_text
                         AND c.created_at::text IS NOT DISTINCT FROM p.created_text
               END
        RETURNING c.name, c.kind, c.queue, c.args, c.priority, c.max_attempts, c.tags,
                  c.metadata, CASE WHEN p.park IS NULL THEN p.fires
                                   ELSE '{}'::timestamptz[] END AS fires
    )
    INSERT INTO awa_jobs
        (kind, queue, args, state, priority, attempt, max_attempts, run_at, created_at,
         errors, tags, metadata)
    SELECT m.kind, m.queue, m.args, 'available', m.priority, 0, m.max_attempts,
           clock_timestamp(), clock_timestamp(), '[]'::jsonb, m.tags,
           m.metadata || jsonb_build_object('cron_name', m.name,
                                            'cron_fire_at', awa_format_fire_at(f.fire_at))
      FROM mark AS m
     CROSS JOIN LATERAL unnest(m.fires) WITH ORDINALITY AS f(fire_at, n)
     ORDER BY m.name, f.n
    ON CONFLICT DO NOTHING
    RETURNING *
$$;

COMMENT ON FUNCTION awa_cron_schedule_fence_v2() IS 'awa_django 0008_parked_rows';
COMMENT ON FUNCTION awa_cron_fire_v3(jsonb) IS 'awa_django 0008_parked_rows';
