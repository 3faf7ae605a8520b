-- Undo 0026_payload_measure.sql (after the migration's lock-order preamble).
DROP FUNCTION awa_cron_fire_v8(jsonb);
-- The previous release knows no unique-key skips: their history goes with it.
DELETE FROM awa_cron_slot_outcomes WHERE outcome = 'skipped_unique';
DELETE FROM awa_cron_slot_counts WHERE reason = 'unique';
ALTER TABLE awa_cron_slot_counts DROP CONSTRAINT awa_cron_slot_counts_reason_check;
ALTER TABLE awa_cron_slot_counts ADD CONSTRAINT awa_cron_slot_counts_reason_check
    CHECK (reason IN ('overlap', 'deadline'));
ALTER TABLE awa_cron_slot_outcomes DROP CONSTRAINT awa_cron_slot_outcomes_outcome_check;
ALTER TABLE awa_cron_slot_outcomes ADD CONSTRAINT awa_cron_slot_outcomes_outcome_check
    CHECK (outcome IN ('skipped_overlap', 'missed_deadline'));
DROP TRIGGER awa_jobs_flow_keys ON awa_jobs;
CREATE TRIGGER awa_jobs_flow_keys
    BEFORE INSERT ON awa_jobs
    FOR EACH ROW
    WHEN (jsonb_typeof(NEW.metadata) = 'object' AND NEW.metadata ? 'awa_flow')
    EXECUTE FUNCTION awa_jobs_flow_keys_v1();
DROP FUNCTION awa_jobs_flow_keys_v2();
DROP FUNCTION awa_flow_key_v1(text, text, text);
DROP TRIGGER awa_cron_schedule_fence_payload ON awa_cron_jobs;
DROP TRIGGER awa_cron_schedule_fence ON awa_cron_jobs;
CREATE TRIGGER awa_cron_schedule_fence
    BEFORE UPDATE OR DELETE ON awa_cron_jobs
    FOR EACH ROW EXECUTE FUNCTION awa_cron_schedule_fence_v3();
DROP FUNCTION awa_cron_schedule_fence_v4();
DROP TRIGGER awa_cron_jobs_measure ON awa_cron_jobs;
DROP FUNCTION awa_cron_jobs_measure_v1();
ALTER TABLE awa_cron_jobs
    DROP COLUMN args_bytes,
    DROP COLUMN args_depth,
    DROP COLUMN metadata_bytes,
    DROP COLUMN metadata_depth;
