-- Undo 0025_bounded_errors.sql (the versions it replaced were never dropped).
DROP FUNCTION IF EXISTS awa_rescue_v2(interval, integer, integer);
DROP FUNCTION IF EXISTS awa_release_v3(bigint, integer, interval, interval, jsonb, integer, integer);
DROP FUNCTION IF EXISTS awa_fail_job_v2(bigint, integer, jsonb, integer, integer);
DROP FUNCTION IF EXISTS awa_fail_v2(bigint, integer, jsonb, timestamptz, integer, integer);
DROP FUNCTION IF EXISTS awa_errors_append_v1(jsonb, jsonb, integer, integer);

ALTER TABLE awa_jobs ALTER COLUMN errors SET STORAGE EXTENDED;
