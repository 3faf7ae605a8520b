-- awa_django 0018_execution_policies: per-schedule overlap, starting deadline
-- and jitter, decided inside the fire statement, and the accounting of every
-- slot not enqueued. Installed by migration 0018_execution_policies (after the
-- overlap/starting_deadline/jitter columns exist), undone by
-- 0018_execution_policies.reverse.sql. Frozen once released (see 0002_cron_core.sql).

-- The unfinished jobs of a schedule, for the overlap check: only jobs that
-- can still run are in it, so the check reads a handful of index entries
-- whatever the schedule's history (finished jobs leave the index).
CREATE INDEX awa_jobs_cron_unfinished ON awa_jobs ((metadata ->> 'cron_name'), state)
    WHERE metadata ? 'cron_name' AND state IN ('available', 'scheduled', 'running', 'retryable');

-- Slots a schedule did not enqueue because of its policy: a capped history
-- (trimmed by the leader's maintenance, see scheduler/vacuum.py) ...
CREATE TABLE awa_cron_slot_outcomes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL,
    slot timestamptz NOT NULL,
    outcome text NOT NULL CHECK (outcome IN ('skipped_overlap', 'missed_deadline')),
    -- For skipped_overlap: the oldest unfinished job of the schedule then.
    blocked_by bigint,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX awa_cron_slot_outcomes_name_slot ON awa_cron_slot_outcomes (name, slot DESC, id DESC);

-- ... and a counter per schedule and reason that is never trimmed.
CREATE TABLE awa_cron_slot_counts (
    name text NOT NULL,
    reason text NOT NULL CHECK (reason IN ('overlap', 'deadline')),
    count bigint NOT NULL DEFAULT 0,
    last_slot timestamptz,
    PRIMARY KEY (name, reason)
);

-- The jitter offset of one slot: a pure function of (name, slot), in
-- [0, jitter), so every evaluation of a slot gives it the same run_at and
-- schedules sharing an expression spread out. Mirrored by
-- awa_django.leader.policies.jitter_offset.
CREATE FUNCTION awa_cron_jitter_v1(p_name text, p_slot timestamptz, p_jitter double precision)
RETURNS interval
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT make_interval(secs => (
        ('x' || substr(md5(p_name || '@' || to_char(p_slot AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
                           || '+00:00'), 1, 15))::bit(60)::bigint
        % greatest(1, round(p_jitter * 1000000)::bigint)) / 1000000.0)
$$;

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

DROP TRIGGER awa_cron_schedule_fence ON awa_cron_jobs;
CREATE TRIGGER awa_cron_schedule_fence
    BEFORE UPDATE OR DELETE ON awa_cron_jobs
    FOR EACH ROW EXECUTE FUNCTION awa_cron_schedule_fence_v3();

-- awa_cron_fire_v4 (0016_fire_job_metadata: job_metadata merged into each
-- fired job's metadata) plus the execution policies. Two statements, in this order:
--   1. lock the plan's rows (by name, skipping rows another session holds);
--   2. with a snapshot taken *after* those locks, decide and write each row's
--      slots: the compare-and-swap, the overlap check, the jobs, the
--      accounting.
-- Every writer of a job of a schedule holds its row lock (a fire FOR UPDATE,
-- a manual trigger FOR SHARE), so once the lock is held, the jobs statement 2
-- sees are all the schedule's jobs there are: no job of the schedule can be
-- inserted between the check and the insert, and a job that finishes while
-- the statement runs is seen either as unfinished (the slot is skipped and
-- accounted for) or as finished (the slot fires). With one statement whose
-- snapshot predates the lock (v3's shape), a job committed in between would
-- be missed by the check.
--
-- Per row: its automatic slots are fires (due, inside the deadline) and
-- missed (outside the deadline: at most the last HISTORY of them are listed,
-- missed_count counts all); the token advances to "advance" either way.
-- overlap 'skip' enqueues the first fire only while no job of the schedule is
-- unfinished, 'buffer_one' at most up to two unfinished jobs and none waiting;
-- the other fires are skipped_overlap. The jitter delays each job's run_at
-- by awa_cron_jitter_v1(name, slot, jitter) from its slot.
-- p_plan: [{"name", "prev", "created_at", "prev_text", "created_text",
--           "cron_expr", "timezone", "missed_fire_policy", "starting_deadline",
--           "fires", "missed", "missed_count", "advance", "next_fire_at", "park",
--           "job_metadata"}]
CREATE FUNCTION awa_cron_fire_v5(p_plan jsonb) RETURNS SETOF awa_jobs
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    locked_names text[];
BEGIN
    -- Lock order of every writer: schedule rows by name.
    SELECT coalesce(array_agg(l.name ORDER BY l.name), '{}') INTO locked_names
      FROM (SELECT c.name
              FROM awa_cron_jobs AS c
             WHERE c.name IN (SELECT e ->> 'name' FROM jsonb_array_elements(p_plan) AS e)
             ORDER BY c.name
               FOR UPDATE SKIP LOCKED) AS l;
    IF cardinality(locked_names) = 0 THEN
        RETURN;
    END IF;
    PERFORM set_config('awa.cron_policies', 'on', true);
    RETURN QUERY
    WITH plan AS (
        SELECT p.*
          FROM jsonb_to_recordset(p_plan) AS p(
                   name text, prev timestamptz, created_at timestamptz, prev_text text,
                   created_text text, cron_expr text, timezone text,
                   missed_fire_policy text, starting_deadline double precision,
                   fires timestamptz[], missed timestamptz[], missed_count bigint,
                   advance timestamptz, next_fire_at timestamptz, park text, job_metadata jsonb)
         WHERE p.name = ANY (locked_names)
    ), busy AS MATERIALIZED (
        -- The unfinished jobs of each schedule with an overlap policy that
        -- has something to fire: one probe of awa_jobs_cron_unfinished per
        -- row (LATERAL), never a join over every unfinished job; computed
        -- once (MATERIALIZED: inlined, the planner may re-run it per row).
        SELECT c.name, c.overlap, u.unfinished, u.running, u.blocker
          FROM awa_cron_jobs AS c
          JOIN plan AS p ON p.name = c.name AND p.park IS NULL AND cardinality(p.fires) > 0
         CROSS JOIN LATERAL (
               SELECT count(*) AS unfinished, count(*) FILTER (WHERE j.state = 'running') AS running,
                      min(j.id) AS blocker
                 FROM awa_jobs AS j
                WHERE (j.metadata ->> 'cron_name') = c.name AND j.metadata ? 'cron_name'
                  AND j.state IN ('available', 'scheduled', 'running', 'retryable')) AS u
         WHERE c.overlap <> 'allow'
    ), mark AS (
        UPDATE awa_cron_jobs AS c
           SET last_enqueued_at = CASE WHEN p.park IS NULL
                                       THEN COALESCE(p.advance, p.fires[cardinality(p.fires)],
                                                     c.last_enqueued_at)
                                       ELSE c.last_enqueued_at END,
               next_fire_at = CASE WHEN p.park IS NULL THEN p.next_fire_at
                                   ELSE '9999-12-31T00:00:00+00:00' END,
               updated_at = CASE WHEN p.park IS NULL
                                      AND (p.advance IS NOT NULL OR cardinality(p.fires) > 0)
                                 THEN clock_timestamp() ELSE c.updated_at END,
               parked_at = CASE WHEN p.park IS NULL THEN NULL
                                ELSE COALESCE(c.parked_at, clock_timestamp()) END,
               parked_reason = p.park
          FROM plan AS p
          LEFT JOIN busy AS b ON b.name = p.name
         WHERE c.name = p.name
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
                         AND c.starting_deadline IS NOT DISTINCT FROM p.starting_deadline
                    ELSE c.last_enqueued_at::text IS NOT DISTINCT FROM p.prev_text
                         AND c.created_at::text IS NOT DISTINCT FROM p.created_text
               END
        RETURNING c.name, c.kind, c.queue, c.args, c.priority, c.max_attempts, c.tags,
                  c.metadata, c.jitter, c.overlap, b.blocker, p.job_metadata,
                  CASE WHEN p.park IS NULL THEN p.fires ELSE '{}'::timestamptz[] END AS fires,
                  CASE WHEN p.park IS NULL THEN COALESCE(p.missed, '{}') ELSE '{}'::timestamptz[] END AS missed,
                  CASE WHEN p.park IS NULL THEN COALESCE(p.missed_count, 0) ELSE 0 END AS missed_count,
                  CASE WHEN b.name IS NULL THEN cardinality(p.fires)
                       WHEN b.overlap = 'skip' THEN CASE WHEN b.unfinished > 0 THEN 0 ELSE 1 END
                       -- buffer_one: nothing while a job waits, else up to two unfinished.
                       WHEN b.unfinished > b.running THEN 0
                       ELSE greatest(0, 2 - b.unfinished)::integer END AS capacity
    ), slots AS (
        SELECT m.*, f.fire_at, f.n,
               CASE WHEN m.jitter > 0 THEN f.fire_at + awa_cron_jitter_v1(m.name, f.fire_at, m.jitter)
                    ELSE clock_timestamp() END AS run_at
          FROM mark AS m
         CROSS JOIN LATERAL unnest(m.fires) WITH ORDINALITY AS f(fire_at, n)
    ), outcomes AS (
        INSERT INTO awa_cron_slot_outcomes (name, slot, outcome, blocked_by)
        SELECT s.name, s.fire_at, 'skipped_overlap', s.blocker FROM slots AS s WHERE s.n > s.capacity
        UNION ALL
        SELECT m.name, x.slot, 'missed_deadline', NULL
          FROM mark AS m CROSS JOIN LATERAL unnest(m.missed) AS x(slot)
        RETURNING 1
    ), counted AS (
        INSERT INTO awa_cron_slot_counts AS k (name, reason, count, last_slot)
        SELECT t.name, t.reason, sum(t.n)::bigint, max(t.last_slot)
          FROM (SELECT s.name, 'overlap' AS reason, count(*) AS n, max(s.fire_at) AS last_slot
                  FROM slots AS s WHERE s.n > s.capacity GROUP BY s.name
                UNION ALL
                SELECT m.name, 'deadline', m.missed_count, m.missed[cardinality(m.missed)]
                  FROM mark AS m WHERE m.missed_count > 0) AS t
         GROUP BY t.name, t.reason
        ON CONFLICT (name, reason) DO UPDATE
           SET count = k.count + EXCLUDED.count,
               last_slot = GREATEST(k.last_slot, EXCLUDED.last_slot)
        RETURNING 1
    )
    INSERT INTO awa_jobs
        (kind, queue, args, state, priority, attempt, max_attempts, run_at, created_at,
         errors, tags, metadata)
    SELECT s.kind, s.queue, s.args,
           CASE WHEN s.run_at > clock_timestamp() THEN 'scheduled' ELSE 'available' END,
           s.priority, 0, s.max_attempts, s.run_at, clock_timestamp(), '[]'::jsonb, s.tags,
           s.metadata || CASE WHEN jsonb_typeof(s.job_metadata) = 'object'
                              THEN s.job_metadata ELSE '{}'::jsonb END
                      || jsonb_build_object('cron_name', s.name,
                                            'cron_fire_at', awa_format_fire_at(s.fire_at))
           -- buffer_one: the waiting job starts only once the running one
           -- ended, held back at claim time by a concurrency key of limit 1
           -- (awa_flow is rendered into the job's concurrency_key by
           -- 0017_flow_control's trigger on awa_jobs, awa_jobs_flow_keys_v1).
           || CASE WHEN s.overlap = 'buffer_one'
                   THEN jsonb_build_object('awa_flow',
                            CASE WHEN jsonb_typeof(s.metadata -> 'awa_flow') = 'object'
                                 THEN s.metadata -> 'awa_flow' ELSE '{}'::jsonb END
                            || jsonb_build_object('concurrency_key', 'awa:overlap:{name}',
                                                  'concurrency_limit', 1))
                   ELSE '{}'::jsonb END
      FROM slots AS s
     WHERE s.n <= s.capacity
     ORDER BY s.name, s.n
    ON CONFLICT DO NOTHING
    RETURNING *;
    PERFORM set_config('awa.cron_policies', '', true);
END
$$;

COMMENT ON FUNCTION awa_cron_jitter_v1(text, timestamptz, double precision) IS 'awa_django 0018_execution_policies';
COMMENT ON FUNCTION awa_cron_schedule_fence_v3() IS 'awa_django 0018_execution_policies';
COMMENT ON FUNCTION awa_cron_fire_v5(jsonb) IS 'awa_django 0018_execution_policies';
