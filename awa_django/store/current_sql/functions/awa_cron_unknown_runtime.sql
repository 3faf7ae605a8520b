-- awa_cron_unknown_runtime: the current version, awa_cron_unknown_runtime_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

-- A heartbeat from a runtime that does not speak the current protocol restarts
-- every owner's grace clock. Only rows that still hold a clock are written, so
-- repeated legacy heartbeats create no dead tuples (idempotent).
CREATE FUNCTION awa_cron_unknown_runtime_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.cron_protocol IS DISTINCT FROM awa_cron_protocol_version() THEN
        UPDATE awa_cron_owners
           SET agreed_since = NULL, evidence_until = NULL
         WHERE agreed_since IS NOT NULL OR evidence_until IS NOT NULL;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION awa_cron_unknown_runtime_v1() IS 'awa_django 0004_reconciliation';
