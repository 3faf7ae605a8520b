-- Enqueue: new rows of awa_jobs. Like the leader's fires, "scheduled" and run_at
-- are decided by the database clock: a job whose run_after is in the future is
-- 'scheduled', else 'available' and due now.

-- name: insert_job
-- One job (enqueue()) from scalar parameters: half the time of a one-element
-- unnest, client and server. Returns what the database computed.
INSERT INTO awa_jobs (kind, queue, args, priority, max_attempts, metadata, state, run_at)
VALUES (%(kind)s, %(queue)s, %(args)s::jsonb, %(priority)s, %(max_attempts)s, %(metadata)s::jsonb,
        CASE WHEN %(run_after)s::timestamptz > statement_timestamp() THEN 'scheduled' ELSE 'available' END,
        coalesce(%(run_after)s::timestamptz, statement_timestamp()))
RETURNING id, state, run_at, created_at;

-- name: insert_jobs
-- A whole batch in one INSERT: parallel arrays unnested in call order (the
-- ids, from the identity, follow that order). Returns what the database computed.
INSERT INTO awa_jobs (kind, queue, args, priority, max_attempts, metadata, state, run_at)
SELECT u.kind, u.queue, u.args, u.priority, %(max_attempts)s, u.metadata,
       CASE WHEN u.run_after > statement_timestamp() THEN 'scheduled' ELSE 'available' END,
       coalesce(u.run_after, statement_timestamp())
  FROM unnest(%(kinds)s::text[], %(queues)s::text[], %(args)s::jsonb[], %(priorities)s::integer[],
              %(metadatas)s::jsonb[], %(run_afters)s::timestamptz[])
       WITH ORDINALITY AS u(kind, queue, args, priority, metadata, run_after, n)
 ORDER BY u.n
RETURNING id, state, run_at, created_at;

-- name: insert_keyed_job
-- One job with flow-control keys. ON CONFLICT names the partial unique index
-- awa_jobs_unique_key (its predicate repeated): the insert does nothing while an
-- unfinished job holds the key, waiting first for a transaction that is
-- inserting one. The row inserted, whole; none when the key is taken.
INSERT INTO awa_jobs (kind, queue, args, priority, max_attempts, metadata, state, run_at,
                      unique_key, concurrency_key, concurrency_limit)
VALUES (%(kind)s, %(queue)s, %(args)s::jsonb, %(priority)s, %(max_attempts)s, %(metadata)s::jsonb,
        CASE WHEN %(run_after)s::timestamptz > statement_timestamp() THEN 'scheduled' ELSE 'available' END,
        coalesce(%(run_after)s::timestamptz, statement_timestamp()),
        %(unique_key)s, %(concurrency_key)s, %(concurrency_limit)s)
ON CONFLICT (unique_key)
   WHERE unique_key IS NOT NULL AND state IN ('available', 'scheduled', 'running', 'retryable')
   DO NOTHING
RETURNING *;

-- name: unique_key_holder_of_key
-- The unfinished job holding a unique key, whole (none when the key is free).
SELECT * FROM awa_jobs
 WHERE unique_key = %(unique_key)s AND state IN ('available', 'scheduled', 'running', 'retryable');
