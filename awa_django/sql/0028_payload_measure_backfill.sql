-- awa_django 0028_payload_measure_backfill: the schedules stored before
-- 0026_payload_measure get their measures (the trigger computes them when a
-- measure column is written). As an operator's statement (awa.cron_admin), so
-- that the ownership fence lets a measure through on owned and retired rows;
-- nothing else of a row changes.
BEGIN;
SELECT set_config('awa.cron_admin', 'on', true);
UPDATE awa_cron_jobs SET args_bytes = NULL
 WHERE args_bytes IS NULL OR args_depth IS NULL OR metadata_bytes IS NULL OR metadata_depth IS NULL;
COMMIT;
