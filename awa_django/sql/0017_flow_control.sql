-- awa_django 0017_flow_control: unique keys, concurrency keys and queue
-- limits. Installed by migration 0017_flow_control, undone by
-- 0017_flow_control.reverse.sql. Frozen once released (see 0002_cron_core.sql).
--
-- unique_key: at most one unfinished job (waiting, scheduled, running or
-- waiting to retry) per key, enforced by a partial unique index; enqueue
-- inserts with ON CONFLICT DO NOTHING and returns the existing job instead.
--
-- concurrency_key / concurrency_limit: at most concurrency_limit jobs of one
-- key run at once across every worker. Enforced at claim time by counting the
-- key's running jobs (a partial index holding running keyed jobs only), with
-- the count serialised by a transaction-level advisory lock per key: no
-- counter row, so no row every claim of every worker updates. Rescue and
-- completion free a slot by changing the job's state: nothing else to release.
--
-- Queue limits (TASKS[alias]["OPTIONS"]["QUEUE_LIMITS"]) come with each claim
-- as p_limits ({"queue": {"rate": n, "period": seconds, "concurrency": m}}):
-- at most "rate" attempts start in any sliding window of "period" seconds
-- (counted from attempted_at through awa_jobs_queue_attempted) and at most
-- "concurrency" run at once, serialised by an advisory lock per queue.
--
-- awa_claim_v3 / awa_complete_claim_v3 supersede the _v2 functions and keep
-- their start order (highest priority, earliest run_at, then id). The _v2
-- functions stay for processes of the previous release during a rolling
-- deploy; they do not know keys or limits.

ALTER TABLE awa_jobs
    ADD COLUMN unique_key text,
    ADD COLUMN concurrency_key text,
    ADD COLUMN concurrency_limit integer;

CREATE UNIQUE INDEX awa_jobs_unique_key ON awa_jobs (unique_key)
 WHERE unique_key IS NOT NULL AND state IN ('available', 'scheduled', 'running', 'retryable');

CREATE INDEX awa_jobs_concurrency_running ON awa_jobs (concurrency_key)
 WHERE state = 'running' AND concurrency_key IS NOT NULL;

CREATE INDEX awa_jobs_queue_attempted ON awa_jobs (queue, attempted_at)
 WHERE attempted_at IS NOT NULL;

-- Advisory lock namespaces (the first key of the two-integer form).
-- 7274310: a concurrency key; 7274311: a limited queue.

-- Room left for concurrency key p_key (limit p_limit). The key's lock is
-- held to the end of the claim's transaction, so this statement's count,
-- taken after the lock, sees every committed claim, and no other claim counts
-- the key until this one commits. p_wait: wait for the lock (a claim's first
-- lock: it holds no other, so it cannot be part of a deadlock cycle; the
-- rows it holds are never waited for, every claim skips locked rows);
-- otherwise 0 when another transaction is claiming for the key right now.
CREATE FUNCTION awa_key_room_v1(p_key text, p_limit integer, p_wait boolean) RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    running integer;
BEGIN
    IF p_wait THEN
        PERFORM pg_advisory_xact_lock(7274310, hashtext(p_key));
    ELSIF NOT pg_try_advisory_xact_lock(7274310, hashtext(p_key)) THEN
        RETURN 0;
    END IF;
    -- Counted up to the limit: whatever runs beyond it changes nothing.
    SELECT count(*) INTO running FROM (
        SELECT 1 FROM awa_jobs
         WHERE state = 'running' AND concurrency_key = p_key
         LIMIT coalesce(p_limit, 1)) AS r;
    RETURN greatest(coalesce(p_limit, 1) - running, 0);
END
$$;

-- Attempts queue p_queue may start now under its limits p_limit
-- ({"rate": n, "period": seconds, "concurrency": m}, each optional), under
-- the queue's lock as awa_key_room_v1 (p_wait likewise).
CREATE FUNCTION awa_queue_room_v1(p_queue text, p_limit jsonb, p_wait boolean) RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    room integer := 2147483647;
    used integer;
BEGIN
    IF p_wait THEN
        PERFORM pg_advisory_xact_lock(7274311, hashtext(p_queue));
    ELSIF NOT pg_try_advisory_xact_lock(7274311, hashtext(p_queue)) THEN
        RETURN 0;
    END IF;
    IF p_limit ? 'concurrency' THEN
        SELECT count(*) INTO used FROM (
            SELECT 1 FROM awa_jobs WHERE state = 'running' AND queue = p_queue
             LIMIT (p_limit ->> 'concurrency')::integer) AS r;
        room := least(room, (p_limit ->> 'concurrency')::integer - used);
    END IF;
    IF p_limit ? 'rate' THEN
        -- The starts in the window, counted up to the rate (a rate's cost
        -- grows with its count, not with the queue).
        SELECT count(*) INTO used FROM (
            SELECT 1 FROM awa_jobs
             WHERE queue = p_queue AND attempted_at IS NOT NULL
               AND attempted_at > clock_timestamp() - make_interval(secs => (p_limit ->> 'period')::float8)
             LIMIT (p_limit ->> 'rate')::integer) AS s;
        room := least(room, (p_limit ->> 'rate')::integer - used);
    END IF;
    RETURN greatest(room, 0);
END
$$;

-- The ids of up to p_limit ready jobs to claim, in start order, locked
-- (FOR UPDATE SKIP LOCKED). A job whose key or queue has no room is passed
-- over: the jobs behind it are claimed. Only the claim's first key or queue
-- lock is waited for (a concurrent claim holds it a moment); a later one
-- another claim holds is taken as no room this time. Rows are fetched one
-- at a time, so a row is locked only once it is looked at. A job whose key
-- is full at the statement's snapshot is filtered out by the query itself;
-- a queue found full is excluded by reopening the query without it (queues
-- are few). The look-ahead bound (p_limit + 200 rows per query) only limits
-- how many jobs of keys that fill up within this one claim are passed over.
CREATE FUNCTION awa_claim_pick_v1(p_queues text[], p_limit integer, p_limits jsonb)
RETURNS bigint[]
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    picked bigint[] := '{}';
    full_queues text[] := '{}';
    room_queues text[] := '{}';
    queue_room integer[] := '{}';
    keys text[] := '{}';
    key_room integer[] := '{}';
    candidates refcursor;
    locked boolean := false;  -- holds a key or queue lock: wait for no other
    j record;
    q integer;
    k integer;
    reopen boolean;
BEGIN
    IF p_limit IS NULL OR p_limit <= 0 THEN
        RETURN picked;
    END IF;
    LOOP
        reopen := false;
        OPEN candidates FOR
            SELECT r.id, r.queue, r.concurrency_key, r.concurrency_limit
              FROM awa_jobs AS r
             WHERE r.state IN ('available', 'scheduled', 'retryable')
               AND r.run_at <= clock_timestamp()
               AND (p_queues IS NULL OR r.queue = ANY (p_queues))
               AND r.queue <> ALL (full_queues)
               AND r.id <> ALL (picked)
               AND NOT EXISTS (SELECT 1 FROM awa_queue_meta AS m
                                WHERE m.queue = r.queue AND m.paused_at IS NOT NULL)
               AND (r.concurrency_key IS NULL
                    OR (SELECT count(*) FROM awa_jobs AS c
                         WHERE c.state = 'running' AND c.concurrency_key = r.concurrency_key)
                       < coalesce(r.concurrency_limit, 1))
             ORDER BY r.priority DESC, r.run_at, r.id
             LIMIT p_limit - cardinality(picked) + 200
               FOR UPDATE OF r SKIP LOCKED;
        LOOP
            FETCH candidates INTO j;
            EXIT WHEN NOT FOUND;
            q := NULL;
            IF p_limits IS NOT NULL AND p_limits ? j.queue THEN
                q := array_position(room_queues, j.queue);
                IF q IS NULL THEN
                    room_queues := room_queues || j.queue;
                    queue_room := queue_room || awa_queue_room_v1(j.queue, p_limits -> j.queue, NOT locked);
                    locked := true;
                    q := cardinality(room_queues);
                END IF;
                IF queue_room[q] <= 0 THEN
                    full_queues := full_queues || j.queue;
                    reopen := true;
                    EXIT;
                END IF;
            END IF;
            IF j.concurrency_key IS NOT NULL THEN
                k := array_position(keys, j.concurrency_key);
                IF k IS NULL THEN
                    keys := keys || j.concurrency_key;
                    key_room := key_room || awa_key_room_v1(j.concurrency_key, j.concurrency_limit, NOT locked);
                    locked := true;
                    k := cardinality(keys);
                END IF;
                CONTINUE WHEN key_room[k] <= 0;
                key_room[k] := key_room[k] - 1;
            END IF;
            IF q IS NOT NULL THEN
                queue_room[q] := queue_room[q] - 1;
            END IF;
            picked := picked || j.id;
            EXIT WHEN cardinality(picked) >= p_limit;
        END LOOP;
        CLOSE candidates;
        EXIT WHEN NOT reopen OR cardinality(picked) >= p_limit;
    END LOOP;
    RETURN picked;
END
$$;

-- awa_claim_v2 (0014_claim_order.sql) with keys and queue limits; its rows
-- in start order.
CREATE FUNCTION awa_claim_v3(p_queues text[], p_limit integer, p_worker text, p_limits jsonb)
RETURNS SETOF awa_jobs
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    ids bigint[];
BEGIN
    ids := awa_claim_pick_v1(p_queues, p_limit, p_limits);
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH claimed AS (
        UPDATE awa_jobs AS j
           SET state = 'running',
               attempt = j.attempt + 1,
               attempted_at = clock_timestamp(),
               heartbeat_at = clock_timestamp(),
               worker_ids = array_append(j.worker_ids, p_worker)
         WHERE j.id = ANY (ids)
        RETURNING j.*
    )
    SELECT * FROM claimed AS c ORDER BY c.priority DESC, c.run_at, c.id;
END
$$;

-- awa_complete_claim_v2 (0014_claim_order.sql) with keys and queue limits:
-- the completions come first, so the slots they free are claimable by the
-- same statement.
CREATE FUNCTION awa_complete_claim_v3(
    p_ids bigint[], p_attempts integer[], p_results jsonb[],
    p_queues text[], p_limit integer, p_worker text, p_limits jsonb)
RETURNS SETOF awa_jobs
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN QUERY
    UPDATE awa_jobs AS j
       SET state = 'completed', result = d.result, finished_at = clock_timestamp(),
           heartbeat_at = NULL
      FROM unnest(p_ids, p_attempts, p_results) AS d(id, attempt, result)
     WHERE j.id = d.id AND j.state = 'running' AND j.attempt = d.attempt
    RETURNING j.*;
    IF p_limit > 0 THEN
        RETURN QUERY SELECT * FROM awa_claim_v3(p_queues, p_limit, p_worker, p_limits);
    END IF;
END
$$;

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

CREATE TRIGGER awa_jobs_flow_keys
    BEFORE INSERT ON awa_jobs
    FOR EACH ROW
    WHEN (jsonb_typeof(NEW.metadata) = 'object' AND NEW.metadata ? 'awa_flow')
    EXECUTE FUNCTION awa_jobs_flow_keys_v1();

COMMENT ON FUNCTION awa_jobs_flow_keys_v1() IS 'awa_django 0017_flow_control';
COMMENT ON FUNCTION awa_key_room_v1(text, integer, boolean) IS 'awa_django 0017_flow_control';
COMMENT ON FUNCTION awa_queue_room_v1(text, jsonb, boolean) IS 'awa_django 0017_flow_control';
COMMENT ON FUNCTION awa_claim_pick_v1(text[], integer, jsonb) IS 'awa_django 0017_flow_control';
COMMENT ON FUNCTION awa_claim_v3(text[], integer, text, jsonb) IS 'awa_django 0017_flow_control';
COMMENT ON FUNCTION awa_complete_claim_v3(bigint[], integer[], jsonb[], text[], integer, text, jsonb)
    IS 'awa_django 0017_flow_control';
