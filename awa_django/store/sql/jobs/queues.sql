-- Queues: job counts by queue and state, and the operator's state of each
-- queue (awa_queue_meta: a pause is enforced at dispatch, by the claim).

-- name: job_counts_by_queue_and_state
-- How many jobs each queue holds in each state.
SELECT queue, state, count(*) FROM awa_jobs GROUP BY queue, state;

-- name: queue_meta_rows
-- Every queue's operator state.
SELECT queue, paused_at, paused_by FROM awa_queue_meta;

-- name: queue_is_paused
-- Whether a queue is paused.
SELECT EXISTS (SELECT 1 FROM awa_queue_meta WHERE queue = %(queue)s AND paused_at IS NOT NULL);

-- name: ensure_queue_meta
-- The queue's operator row, created unpaused when missing (waits for a
-- transaction inserting the same queue).
INSERT INTO awa_queue_meta (queue) VALUES (%(queue)s) ON CONFLICT (queue) DO NOTHING;

-- name: lock_queue_meta
-- The queue's operator state, its row locked until the transaction ends.
SELECT paused_at, paused_by FROM awa_queue_meta WHERE queue = %(queue)s FOR UPDATE;

-- name: pause_queue_meta
-- Pause a queue (stamped with the statement's time, by actor).
UPDATE awa_queue_meta SET paused_at = statement_timestamp(), paused_by = %(actor)s WHERE queue = %(queue)s;

-- name: resume_queue_meta
-- Resume a paused queue (no row changed when it was not paused).
UPDATE awa_queue_meta SET paused_at = NULL, paused_by = NULL
 WHERE queue = %(queue)s AND paused_at IS NOT NULL;
