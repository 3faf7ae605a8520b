-- Undo 0020_fire_policy_probe.sql.
DROP FUNCTION awa_cron_fire_v7(jsonb);
