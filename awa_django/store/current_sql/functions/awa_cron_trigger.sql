-- awa_cron_trigger: the current version, awa_cron_trigger_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

-- Manual trigger: an explicit operator action, so it bypasses pause and does
-- not move last_enqueued_at (the automatic schedule is unaffected). Retired
-- rows are refused; FOR SHARE serialises against a concurrent retire.
CREATE FUNCTION awa_cron_trigger_v1(p_name text, p_actor text) RETURNS SETOF awa_jobs
LANGUAGE sql VOLATILE AS $$
    WITH s AS (
        SELECT * FROM awa_cron_jobs
         WHERE name = p_name AND retired_at IS NULL
           FOR SHARE
    )
    INSERT INTO awa_jobs
        (kind, queue, args, state, priority, attempt, max_attempts, run_at, created_at,
         errors, tags, metadata)
    SELECT s.kind, s.queue, s.args, 'available', s.priority, 0, s.max_attempts,
           clock_timestamp(), clock_timestamp(), '[]'::jsonb, s.tags,
           s.metadata || jsonb_build_object('cron_name', s.name, 'triggered_manually', true,
                                            'triggered_by', p_actor)
      FROM s
    RETURNING *
$$;
COMMENT ON FUNCTION awa_cron_trigger_v1(text, text) IS 'awa_django 0002_cron_core';
