-- awa_cron_protocol_lock, awa_cron_protocol_version: unversioned (their contract never changes).
-- Each statement as its migration's SQL file installed it (named in its comment).

-- The single serializer of the protocol: runtime snapshot writes (old writers
-- too, through the statement trigger below), declaration publication, owner
-- lifecycle operations and reconciliation. Transaction-scoped, so it can never
-- leak past a commit or a crash. Lock order everywhere: this lock, then owner
-- rows, then schedule rows by name. No job or heartbeat path takes it.
-- Key: the bytes "AWADJPRT" as a signed 64-bit integer.
CREATE FUNCTION awa_cron_protocol_lock() RETURNS void
LANGUAGE sql VOLATILE
AS $$ SELECT pg_advisory_xact_lock(4708303696999502420) $$;
COMMENT ON FUNCTION awa_cron_protocol_lock() IS 'awa_django 0004_reconciliation';

-- The protocol version this schema speaks. Every current runtime writes the
-- same number into awa_runtime_instances.cron_protocol; a fresh runtime that
-- writes anything else (an older binary writes NULL) blocks automatic
-- retirement. Must equal awa_django.reconciliation.CRON_PROTOCOL_VERSION.
CREATE FUNCTION awa_cron_protocol_version() RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT 1 $$;
COMMENT ON FUNCTION awa_cron_protocol_version() IS 'awa_django 0004_reconciliation';
