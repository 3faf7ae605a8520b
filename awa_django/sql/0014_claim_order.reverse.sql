-- Undo 0014_claim_order.sql.
DROP FUNCTION IF EXISTS awa_complete_claim_v2(bigint[], integer[], jsonb[], text[], integer, text);
DROP FUNCTION IF EXISTS awa_claim_v2(text[], integer, text);
