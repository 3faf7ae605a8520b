-- Undo 0017_flow_control.sql.
DROP TRIGGER IF EXISTS awa_jobs_flow_keys ON awa_jobs;
DROP FUNCTION IF EXISTS awa_jobs_flow_keys_v1();
DROP FUNCTION IF EXISTS awa_complete_claim_v3(bigint[], integer[], jsonb[], text[], integer, text, jsonb);
DROP FUNCTION IF EXISTS awa_claim_v3(text[], integer, text, jsonb);
DROP FUNCTION IF EXISTS awa_claim_pick_v1(text[], integer, jsonb);
DROP FUNCTION IF EXISTS awa_queue_room_v1(text, jsonb, boolean);
DROP FUNCTION IF EXISTS awa_key_room_v1(text, integer, boolean);
DROP INDEX IF EXISTS awa_jobs_queue_attempted;
DROP INDEX IF EXISTS awa_jobs_concurrency_running;
DROP INDEX IF EXISTS awa_jobs_unique_key;
ALTER TABLE awa_jobs
    DROP COLUMN IF EXISTS concurrency_limit,
    DROP COLUMN IF EXISTS concurrency_key,
    DROP COLUMN IF EXISTS unique_key;
