-- awa_heartbeat: the current version, awa_heartbeat_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

-- Keep running attempts alive.
CREATE FUNCTION awa_heartbeat_v1(p_ids bigint[], p_attempts integer[])
RETURNS integer
LANGUAGE sql VOLATILE AS $$
    WITH beat AS (
        UPDATE awa_jobs AS j
           SET heartbeat_at = clock_timestamp()
          FROM unnest(p_ids, p_attempts) AS r(id, attempt)
         WHERE j.id = r.id AND j.attempt = r.attempt AND j.state = 'running'
        RETURNING 1
    )
    SELECT count(*)::integer FROM beat
$$;
COMMENT ON FUNCTION awa_heartbeat_v1(bigint[], integer[]) IS 'awa_django 0003_worker';
