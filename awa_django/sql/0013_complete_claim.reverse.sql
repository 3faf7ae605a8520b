-- Undo 0013_complete_claim.sql.
DROP FUNCTION IF EXISTS awa_complete_claim_v1(bigint[], integer[], jsonb[], text[], integer, text);
