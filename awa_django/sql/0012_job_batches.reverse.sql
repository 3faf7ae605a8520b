-- Undo 0012_job_batches.sql.
DROP FUNCTION IF EXISTS awa_complete_many_v1(bigint[], integer[], jsonb[]);
