-- awa_key_room: the current version, awa_key_room_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

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
COMMENT ON FUNCTION awa_key_room_v1(text, integer, boolean) IS 'awa_django 0017_flow_control';
