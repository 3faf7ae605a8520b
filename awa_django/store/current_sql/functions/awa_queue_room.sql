-- awa_queue_room: the current version, awa_queue_room_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

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
COMMENT ON FUNCTION awa_queue_room_v1(text, jsonb, boolean) IS 'awa_django 0017_flow_control';
