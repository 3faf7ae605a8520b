-- awa_claim_pick: the current version, awa_claim_pick_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

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
COMMENT ON FUNCTION awa_claim_pick_v1(text[], integer, jsonb) IS 'awa_django 0017_flow_control';
