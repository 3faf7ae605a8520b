-- awa_cron_lock_evidence: the current version, awa_cron_lock_evidence_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

CREATE FUNCTION awa_cron_lock_evidence_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM awa_cron_protocol_lock();
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION awa_cron_lock_evidence_v1() IS 'awa_django 0004_reconciliation';
