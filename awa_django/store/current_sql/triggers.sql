-- Every trigger on the awa_* tables as the newest migration leaves it, in the
-- form PostgreSQL prints it (pg_get_triggerdef, without the schema), by table.
-- The functions they execute are in functions/.

-- awa_cron_declarations
CREATE TRIGGER awa_cron_lock_evidence BEFORE INSERT OR DELETE OR UPDATE
    ON awa_cron_declarations
    FOR EACH STATEMENT
    EXECUTE FUNCTION awa_cron_lock_evidence_v1();

-- awa_cron_jobs
CREATE TRIGGER awa_cron_jobs_invalidate BEFORE INSERT OR UPDATE
    ON awa_cron_jobs
    FOR EACH ROW
    EXECUTE FUNCTION awa_cron_jobs_invalidate_v2();

CREATE TRIGGER awa_cron_jobs_measure BEFORE INSERT OR UPDATE OF args, metadata, args_bytes, args_depth, metadata_bytes, metadata_depth
    ON awa_cron_jobs
    FOR EACH ROW
    EXECUTE FUNCTION awa_cron_jobs_measure_v1();

CREATE TRIGGER awa_cron_jobs_notify AFTER INSERT OR UPDATE
    ON awa_cron_jobs
    FOR EACH ROW
    WHEN ((new.next_fire_at IS NULL))
    EXECUTE FUNCTION awa_cron_jobs_notify_v1();

CREATE TRIGGER awa_cron_schedule_fence BEFORE DELETE OR UPDATE
    ON awa_cron_jobs
    FOR EACH ROW
    EXECUTE FUNCTION awa_cron_schedule_fence_v4();

CREATE TRIGGER awa_cron_schedule_fence_payload BEFORE UPDATE OF args, metadata
    ON awa_cron_jobs
    FOR EACH ROW
    EXECUTE FUNCTION awa_cron_schedule_fence_v4('payload');

-- awa_jobs
CREATE TRIGGER awa_jobs_flow_keys BEFORE INSERT
    ON awa_jobs
    FOR EACH ROW
    WHEN (((jsonb_typeof(new.metadata) = 'object'::text) AND (new.metadata ? 'awa_flow'::text)))
    EXECUTE FUNCTION awa_jobs_flow_keys_v2();

CREATE TRIGGER awa_jobs_notify AFTER INSERT
    ON awa_jobs
    FOR EACH STATEMENT
    EXECUTE FUNCTION awa_jobs_notify_v1();

CREATE TRIGGER awa_jobs_started_at BEFORE UPDATE OF attempt
    ON awa_jobs
    FOR EACH ROW
    WHEN ((new.attempt IS DISTINCT FROM old.attempt))
    EXECUTE FUNCTION awa_jobs_started_at_v1();

-- awa_queue_meta
CREATE TRIGGER awa_queue_meta_notify AFTER INSERT OR UPDATE
    ON awa_queue_meta
    FOR EACH STATEMENT
    EXECUTE FUNCTION awa_jobs_notify_v1();

-- awa_runtime_instances
CREATE TRIGGER awa_cron_lock_evidence BEFORE INSERT OR DELETE OR UPDATE
    ON awa_runtime_instances
    FOR EACH STATEMENT
    EXECUTE FUNCTION awa_cron_lock_evidence_v1();

CREATE TRIGGER awa_cron_unknown_runtime BEFORE INSERT OR UPDATE
    ON awa_runtime_instances
    FOR EACH ROW
    EXECUTE FUNCTION awa_cron_unknown_runtime_v1();
