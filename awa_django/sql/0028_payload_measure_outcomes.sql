-- awa_django 0028_payload_measure_outcomes: the outcome check that
-- 0026_payload_measure.sql widened (skipped_unique) holds for the rows already
-- stored. Run by migration 0028_payload_measure_checks in a transaction of its
-- own, which blocks no writer (SHARE UPDATE EXCLUSIVE on this table only).
ALTER TABLE awa_cron_slot_outcomes VALIDATE CONSTRAINT awa_cron_slot_outcomes_outcome_check;
