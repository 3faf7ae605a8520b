-- awa_django 0011_runtime_progress: when each runtime last made progress.
-- For a runcron leader, the end of its last successful evaluation pass; for a
-- standby, its last election attempt; for runtasks, its last turn of the claim
-- loop. Written with every snapshot (database clock), read by `awa health`:
-- a process whose snapshot thread still runs while its main loop hangs shows
-- a fresh last_seen_at and a stale last_pass_at.
ALTER TABLE awa_runtime_instances ADD COLUMN last_pass_at timestamptz NULL;
