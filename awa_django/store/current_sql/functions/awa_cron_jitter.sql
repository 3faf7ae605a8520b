-- awa_cron_jitter: the current version, awa_cron_jitter_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

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
COMMENT ON FUNCTION awa_cron_jitter_v1(text, timestamptz, double precision) IS 'awa_django 0018_execution_policies';
