-- awa_format_fire_at: unversioned (their contract never changes).
-- Each statement as its migration's SQL file installed it (named in its comment).

-- Fire times in job metadata are ISO-8601 UTC text, e.g. 2026-03-29T01:00:00+00:00,
-- independent of the session TimeZone (Awa's ::text cast was not).
CREATE FUNCTION awa_format_fire_at(p_fire_at timestamptz) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
AS $$ SELECT to_char(p_fire_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') || '+00:00' $$;
COMMENT ON FUNCTION awa_format_fire_at(timestamptz) IS 'awa_django 0002_cron_core';
