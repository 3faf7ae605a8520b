-- Undo 0015_hostile_rows.sql.
DROP FUNCTION IF EXISTS awa_json_depth_v1(jsonb, integer);
