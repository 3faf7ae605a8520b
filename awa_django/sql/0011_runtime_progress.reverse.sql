-- Undo 0011_runtime_progress.sql.
ALTER TABLE awa_runtime_instances DROP COLUMN IF EXISTS last_pass_at;
