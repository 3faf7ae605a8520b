-- awa_django 0026_payload_measure_validate: the widened checks of
-- 0026_payload_measure.sql hold for the rows already stored. Run in a
-- transaction of its own, which blocks no writer (SHARE UPDATE EXCLUSIVE).
ALTER TABLE awa_cron_slot_outcomes VALIDATE CONSTRAINT awa_cron_slot_outcomes_outcome_check;
ALTER TABLE awa_cron_slot_counts VALIDATE CONSTRAINT awa_cron_slot_counts_reason_check;
