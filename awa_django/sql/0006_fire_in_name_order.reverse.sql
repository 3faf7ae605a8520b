-- Undo 0006_fire_in_name_order.sql.
DROP FUNCTION IF EXISTS awa_cron_fire_v2(jsonb);
