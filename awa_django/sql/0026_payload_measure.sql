-- awa_django 0026_payload_measure: what a pass reads of a schedule's payload is
-- measured once, when the payload is written, and a unique key never changes
-- meaning. Installed by migration 0026_payload_measure, after its lock-order
-- preamble (the protocol lock, then awa_cron_jobs, awa_jobs and the slot
-- tables: awa_django.db.lock_order); the stored rows are measured and the
-- widened checks validated by 0028_payload_measure_checks, in transactions of
-- their own. Undone by 0026_payload_measure.reverse.sql. Frozen once released (see
-- 0002_cron_core.sql).

-- The size (octet_length of the jsonb text, the measure of AWA_MAX_ARGS_BYTES
-- everywhere) and the nesting depth (up to 201: AWA_MAX_JSON_DEPTH is at most
-- 200) of args and metadata, kept by the trigger below. NULL: not measured
-- (a row written with triggers disabled); the leader then measures it itself.
ALTER TABLE awa_cron_jobs
    ADD COLUMN args_bytes integer,
    ADD COLUMN args_depth smallint,
    ADD COLUMN metadata_bytes integer,
    ADD COLUMN metadata_depth smallint;

-- Measures a written payload, once: an update that leaves args or metadata as
-- they were keeps their measures (a value written into a measure column is
-- replaced, so a measure always describes its payload). A parked row whose
-- payload changes is evaluated again (next_fire_at NULL), so the leader need
-- not re-read parked rows on a timer to notice an edit.
CREATE FUNCTION awa_cron_jobs_measure_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    args_changed boolean := TG_OP = 'INSERT' OR NEW.args IS DISTINCT FROM OLD.args;
    metadata_changed boolean := TG_OP = 'INSERT' OR NEW.metadata IS DISTINCT FROM OLD.metadata;
BEGIN
    IF args_changed OR OLD.args_bytes IS NULL OR OLD.args_depth IS NULL THEN
        NEW.args_bytes := octet_length(NEW.args::text);
        NEW.args_depth := awa_json_depth_v1(NEW.args, 200);
    ELSE
        NEW.args_bytes := OLD.args_bytes;
        NEW.args_depth := OLD.args_depth;
    END IF;
    IF metadata_changed OR OLD.metadata_bytes IS NULL OR OLD.metadata_depth IS NULL THEN
        NEW.metadata_bytes := octet_length(NEW.metadata::text);
        NEW.metadata_depth := awa_json_depth_v1(NEW.metadata, 200);
    ELSE
        NEW.metadata_bytes := OLD.metadata_bytes;
        NEW.metadata_depth := OLD.metadata_depth;
    END IF;
    IF TG_OP = 'UPDATE' AND (args_changed OR metadata_changed) AND OLD.parked_at IS NOT NULL
       AND NEW.next_fire_at IS NOT DISTINCT FROM OLD.next_fire_at THEN
        NEW.next_fire_at := NULL;
    END IF;
    RETURN NEW;
END
$$;

-- Only when a payload or a measure is written: the fire statement's updates
-- (last_enqueued_at, next_fire_at) do not run it.
CREATE TRIGGER awa_cron_jobs_measure
    BEFORE INSERT OR UPDATE OF args, metadata, args_bytes, args_depth, metadata_bytes, metadata_depth
    ON awa_cron_jobs
    FOR EACH ROW EXECUTE FUNCTION awa_cron_jobs_measure_v1();

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

DROP TRIGGER awa_cron_schedule_fence ON awa_cron_jobs;
CREATE TRIGGER awa_cron_schedule_fence
    BEFORE UPDATE OR DELETE ON awa_cron_jobs
    FOR EACH ROW EXECUTE FUNCTION awa_cron_schedule_fence_v4();
-- Named after the first: it runs after it (triggers run in name order).
CREATE TRIGGER awa_cron_schedule_fence_payload
    BEFORE UPDATE OF args, metadata ON awa_cron_jobs
    FOR EACH ROW EXECUTE FUNCTION awa_cron_schedule_fence_v4('payload');

-- A flow-control key rendered from its template: {name} the schedule's name,
-- {slot} the fire's slot. A rendering over the 500 characters of a key keeps
-- its first 467 and appends '#' and the md5 of the whole rendering, so two
-- different renderings never become one key (cutting, as
-- awa_jobs_flow_keys_v1 does, could drop the {slot} that tells slots apart).
-- Declarations refuse such templates; this holds for rows written by hand.
-- An empty rendering (an empty template in a row written by hand) is no key
-- (NULL): a key is 1-500 characters, and an empty one would fail the insert of
-- every job of the fire statement's batch.
CREATE FUNCTION awa_flow_key_v1(p_template text, p_name text, p_slot text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN k = '' THEN NULL WHEN char_length(k) <= 500 THEN k ELSE left(k, 467) || '#' || md5(k) END
      FROM (SELECT replace(replace(p_template, '{name}', p_name), '{slot}', p_slot) AS k) AS r
$$;

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

DROP TRIGGER awa_jobs_flow_keys ON awa_jobs;
CREATE TRIGGER awa_jobs_flow_keys
    BEFORE INSERT ON awa_jobs
    FOR EACH ROW
    WHEN (jsonb_typeof(NEW.metadata) = 'object' AND NEW.metadata ? 'awa_flow')
    EXECUTE FUNCTION awa_jobs_flow_keys_v2();

-- A slot a unique key refused is history too: 'skipped_unique' in the slot
-- history, 'unique' in the counts. Checked for stored rows by
-- 0028_payload_measure_checks.
ALTER TABLE awa_cron_slot_outcomes DROP CONSTRAINT awa_cron_slot_outcomes_outcome_check;
ALTER TABLE awa_cron_slot_outcomes ADD CONSTRAINT awa_cron_slot_outcomes_outcome_check
    CHECK (outcome IN ('skipped_overlap', 'missed_deadline', 'skipped_unique')) NOT VALID;
ALTER TABLE awa_cron_slot_counts DROP CONSTRAINT awa_cron_slot_counts_reason_check;
ALTER TABLE awa_cron_slot_counts ADD CONSTRAINT awa_cron_slot_counts_reason_check
    CHECK (reason IN ('overlap', 'deadline', 'unique')) NOT VALID;

-- awa_cron_fire_v8: awa_cron_fire_v7's contract, and a slot whose job a unique
-- key refused is recorded ('skipped_unique', with the job holding the key)
-- and counted ('unique'), as an overlap skip is. v7 stays installed for the
-- leaders of the previous release during a rolling upgrade.
CREATE FUNCTION awa_cron_fire_v8(p_plan jsonb) RETURNS SETOF awa_jobs
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
                   created_text text, cron_expr text, every_seconds integer, anchor timestamptz,
                   timezone text,
                   missed_fire_policy text, starting_deadline double precision,
                   fires timestamptz[], missed timestamptz[], missed_count bigint,
                   advance timestamptz, next_fire_at timestamptz, park text, job_metadata jsonb)
         WHERE p.name = ANY (locked_names)
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
         WHERE c.name = p.name
           AND c.paused_at IS NULL
           AND c.retired_at IS NULL
           -- The timing read: an expression or an interval (the other NULL).
           AND c.cron_expr IS NOT DISTINCT FROM p.cron_expr
           AND c.every_seconds IS NOT DISTINCT FROM p.every_seconds
           AND c.anchor IS NOT DISTINCT FROM p.anchor
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
                  c.metadata, c.jitter, c.overlap, p.job_metadata,
                  CASE WHEN p.park IS NULL THEN p.fires ELSE '{}'::timestamptz[] END AS fires,
                  CASE WHEN p.park IS NULL THEN COALESCE(p.missed, '{}') ELSE '{}'::timestamptz[] END AS missed,
                  CASE WHEN p.park IS NULL THEN COALESCE(p.missed_count, 0) ELSE 0 END AS missed_count,
                  -- The unfinished jobs of a schedule with an overlap policy
                  -- and a slot to fire, as [unfinished, running, oldest id]:
                  -- one probe of awa_jobs_cron_unfinished for such a row only,
                  -- read in the statement's snapshot, after the row lock.
                  CASE WHEN p.park IS NULL AND cardinality(p.fires) > 0 AND c.overlap <> 'allow'
                       THEN (SELECT ARRAY[count(*), count(*) FILTER (WHERE j.state = 'running'), min(j.id)]
                               FROM awa_jobs AS j
                              WHERE (j.metadata ->> 'cron_name') = c.name AND j.metadata ? 'cron_name'
                                AND j.state IN ('available', 'scheduled', 'running', 'retryable'))
                  END AS busy
    ), policed AS (
        -- How many of its slots each row may enqueue: all of them without a
        -- policy; with skip one, and none while a job is unfinished; with
        -- buffer_one none while a job waits, else up to two unfinished.
        SELECT m.*, m.busy[3] AS blocker,
               CASE WHEN m.busy IS NULL THEN cardinality(m.fires)
                    WHEN m.overlap = 'skip' THEN CASE WHEN m.busy[1] > 0 THEN 0 ELSE 1 END
                    WHEN m.busy[1] > m.busy[2] THEN 0
                    ELSE greatest(0, 2 - m.busy[1])::integer END AS capacity
          FROM mark AS m
    ), slots AS (
        SELECT m.*, f.fire_at, f.n,
               CASE WHEN m.jitter > 0 THEN f.fire_at + awa_cron_jitter_v1(m.name, f.fire_at, m.jitter)
                    ELSE clock_timestamp() END AS run_at
          FROM policed AS m
         CROSS JOIN LATERAL unnest(m.fires) WITH ORDINALITY AS f(fire_at, n)
    ), inserted AS (
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
               -- 0026_payload_measure's trigger on awa_jobs, awa_jobs_flow_keys_v2).
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
        RETURNING *
    ), unique_skips AS (
        -- Slots the policy let through that inserted no job: a unique key an
        -- unfinished job holds refused them (ON CONFLICT DO NOTHING). A slot
        -- whose job is in the ledger already (awa_jobs_cron_slot) is not one.
        -- The holder: the oldest unfinished job with the key, committed before
        -- this statement or inserted by it (an earlier slot of the same row).
        SELECT s.name, s.fire_at,
               least((SELECT min(h.id) FROM awa_jobs AS h
                       WHERE h.unique_key = k.key
                         AND h.state IN ('available', 'scheduled', 'running', 'retryable')),
                     (SELECT min(i.id) FROM inserted AS i WHERE i.unique_key = k.key)) AS holder
          FROM slots AS s
         CROSS JOIN LATERAL (SELECT awa_flow_key_v1(s.metadata -> 'awa_flow' ->> 'unique_key', s.name,
                                                    awa_format_fire_at(s.fire_at)) AS key) AS k
         WHERE s.n <= s.capacity
           AND jsonb_typeof(s.metadata -> 'awa_flow' -> 'unique_key') = 'string'
           -- NOT IN over an uncorrelated subquery: one hash of the inserted
           -- slots for the whole batch (a correlated NOT EXISTS scanned every
           -- inserted job once per slot: quadratic in a catch-up batch).
           AND (s.name, awa_format_fire_at(s.fire_at)) NOT IN (
                   SELECT i.metadata ->> 'cron_name', i.metadata ->> 'cron_fire_at' FROM inserted AS i)
           AND NOT EXISTS (SELECT 1 FROM awa_jobs AS j
                            WHERE (j.metadata ->> 'cron_name') = s.name AND j.metadata ? 'cron_fire_at'
                              AND (j.metadata ->> 'cron_fire_at') = awa_format_fire_at(s.fire_at))
    ), outcomes AS (
        INSERT INTO awa_cron_slot_outcomes (name, slot, outcome, blocked_by)
        SELECT s.name, s.fire_at, 'skipped_overlap', s.blocker FROM slots AS s WHERE s.n > s.capacity
        UNION ALL
        SELECT m.name, x.slot, 'missed_deadline', NULL
          FROM mark AS m CROSS JOIN LATERAL unnest(m.missed) AS x(slot)
        UNION ALL
        SELECT u.name, u.fire_at, 'skipped_unique', u.holder FROM unique_skips AS u
        RETURNING 1
    ), counted AS (
        INSERT INTO awa_cron_slot_counts AS k (name, reason, count, last_slot)
        SELECT t.name, t.reason, sum(t.n)::bigint, max(t.last_slot)
          FROM (SELECT s.name, 'overlap' AS reason, count(*) AS n, max(s.fire_at) AS last_slot
                  FROM slots AS s WHERE s.n > s.capacity GROUP BY s.name
                UNION ALL
                SELECT m.name, 'deadline', m.missed_count, m.missed[cardinality(m.missed)]
                  FROM mark AS m WHERE m.missed_count > 0
                UNION ALL
                SELECT u.name, 'unique', count(*), max(u.fire_at)
                  FROM unique_skips AS u GROUP BY u.name) AS t
         GROUP BY t.name, t.reason
        ON CONFLICT (name, reason) DO UPDATE
           SET count = k.count + EXCLUDED.count,
               last_slot = GREATEST(k.last_slot, EXCLUDED.last_slot)
        RETURNING 1
    )
    -- In insertion order (by name, then slot), as awa_cron_fire_v7 returned them.
    SELECT i.* FROM inserted AS i ORDER BY i.id;
    PERFORM set_config('awa.cron_policies', '', true);
END
$$;

COMMENT ON FUNCTION awa_cron_jobs_measure_v1() IS 'awa_django 0026_payload_measure';
COMMENT ON FUNCTION awa_cron_schedule_fence_v4() IS 'awa_django 0026_payload_measure';
COMMENT ON FUNCTION awa_flow_key_v1(text, text, text) IS 'awa_django 0026_payload_measure';
COMMENT ON FUNCTION awa_jobs_flow_keys_v2() IS 'awa_django 0026_payload_measure';
COMMENT ON FUNCTION awa_cron_fire_v8(jsonb) IS 'awa_django 0026_payload_measure';
