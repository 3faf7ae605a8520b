-- name: fire_plan
-- Fire one batch of plan entries (a jsonb array of PlannedFire) through the
-- set-based fire function: each entry's compare-and-swap, its jobs, its next
-- fire; returns the awa_jobs rows inserted. Sending a plan twice, late, or from
-- a deposed leader never enqueues a slot twice.
SELECT * FROM awa_cron_fire_v8(%s::jsonb);

-- name: fire_plan_at_slot
-- A prepared slot's batch, sent just before its slot: the database sleeps
-- until the slot (its clock decides, as for every fire), checks the plan is
-- still fresh (reached at most stale seconds after the slot) and fires it, or
-- an empty plan when stale, all in this one statement, so no round trip to the
-- leader stands between the slot and the fire. The function stamps every row
-- with clock_timestamp(), read after the sleep. Always one row: the first
-- column says whether the plan was fresh; the others are a job, or all NULL.
-- Parameters: slot, stale, plan.
WITH waited AS MATERIALIZED (SELECT pg_sleep_until(%(slot)s)),
     checked AS MATERIALIZED (
        SELECT clock_timestamp() - %(slot)s <= make_interval(secs => %(stale)s) AS fresh FROM waited)
SELECT checked.fresh, j.*
  FROM checked
  LEFT JOIN LATERAL awa_cron_fire_v8(CASE WHEN checked.fresh THEN %(plan)s::jsonb
                                          ELSE '[]'::jsonb END) AS j ON true;

-- name: sleep_until_slot
-- The wait and freshness check of fire_plan_at_slot alone, before a batch of
-- such a plan is fired again entry by entry. Parameters: slot, stale.
SELECT clock_timestamp() - %(slot)s <= make_interval(secs => %(stale)s), pg_sleep_until(%(slot)s);

-- name: set_fire_lock_timeout
-- Bound what a fire statement waits on another transaction (AWA_LOCK_TIMEOUT,
-- in milliseconds as text), for the session.
SELECT set_config('lock_timeout', %s, false);
