-- name: try_leader_lock
-- Take the leader's session-scoped advisory lock if it is free; true when taken.
SELECT pg_try_advisory_lock(%(key)s::bigint);

-- name: release_leader_lock
-- Release the leader's advisory lock held by this session.
SELECT pg_advisory_unlock(%(key)s::bigint);

-- name: leader_session_ping
-- A round trip on the leader's lock connection: fails when its session is gone.
SELECT 1;
