-- awa_cron_jobs_measure: the current version, awa_cron_jobs_measure_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

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
COMMENT ON FUNCTION awa_cron_jobs_measure_v1() IS 'awa_django 0026_payload_measure';
