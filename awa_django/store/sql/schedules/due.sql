-- fragment: due_row_columns
-- The columns of a row an evaluation pass plans, as ScheduleRow.from_row reads
-- them (every query that hands the evaluator rows selects exactly these).
-- Parameter: max_depth (AWA_MAX_JSON_DEPTH).
       name, cron_expr, every_seconds, timezone, missed_fire_policy, kind, parked_reason, starting_deadline,
       jitter,
       -- Timestamps a Python datetime (and the fire-time arithmetic) can hold
       -- come back typed; anything else ('infinity', year 0001 or 9999, BC) as
       -- NULL, with the text for the CAS and the parking reason. Reading
       -- 'infinity' typed would fail the whole query (the pass of every schedule).
       CASE WHEN last_enqueued_at BETWEEN '1970-01-01T00:00:00+00:00' AND '9000-01-01T00:00:00+00:00'
            THEN last_enqueued_at END AS last_enqueued_at,
       last_enqueued_at::text AS prev_text,
       CASE WHEN created_at BETWEEN '1970-01-01T00:00:00+00:00' AND '9000-01-01T00:00:00+00:00'
            THEN created_at END AS created_at,
       created_at::text AS created_text,
       CASE WHEN anchor BETWEEN '1970-01-01T00:00:00+00:00' AND '9000-01-01T00:00:00+00:00'
            THEN anchor END AS anchor,
       anchor::text AS anchor_text,
       -- The payload a fire copies into the job, described rather than loaded.
       jsonb_typeof(args) AS args_type,
       jsonb_typeof(args -> 'args') AS args_args_type,
       jsonb_typeof(args -> 'kwargs') AS args_kwargs_type,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(
           CASE WHEN jsonb_typeof(args) = 'object' THEN args ELSE '{}' END) AS k) AS args_keys,
       -- Size and depth as measured when the payload was written (the trigger
       -- awa_cron_jobs_measure keeps them): a pass costs the same whatever the
       -- payloads' sizes. Measured here only for a row written with triggers
       -- disabled (its measures NULL), the depth then up to the limit + 1: a
       -- value with no more opening brackets than the limit cannot be deeper.
       COALESCE(args_bytes, octet_length(args::text)) AS args_bytes,
       jsonb_typeof(metadata) AS metadata_type,
       COALESCE(metadata_bytes, octet_length(metadata::text)) AS metadata_bytes,
       COALESCE(args_depth,
                CASE WHEN octet_length(args::text) - octet_length(translate(args::text, '[{', ''))
                          <= %(max_depth)s THEN 0
                     ELSE awa_json_depth_v1(args, %(max_depth)s) END) AS args_depth,
       COALESCE(metadata_depth,
                CASE WHEN octet_length(metadata::text) - octet_length(translate(metadata::text, '[{', ''))
                          <= %(max_depth)s THEN 0
                     ELSE awa_json_depth_v1(metadata, %(max_depth)s) END) AS metadata_depth,
       statement_timestamp() AS now

-- name: due_schedules_batch
-- One batch of the rows an evaluation pass plans (ScheduleRow.from_row reads
-- them): due, or awaiting a (re)computation (next_fire_at NULL), after a name
-- (keyset), at most a limit. Names first (each arm of the UNION ALL a range
-- scan of the partial index awa_cron_jobs_due, stopping at the limit), the
-- described columns only for the batch: computing them for every due row
-- before the LIMIT made a pass quadratic in the due rows. Rows whose CAS is
-- lost keep next_fire_at NULL; the keyset (name > after) stops a pass from
-- reading them again. Parameters: after, limit, max_depth (AWA_MAX_JSON_DEPTH).
SELECT
       /*@due_row_columns*/
  FROM awa_cron_jobs
 WHERE name = ANY(ARRAY(
    SELECT name FROM (
        (SELECT name FROM awa_cron_jobs
          WHERE paused_at IS NULL AND retired_at IS NULL
            AND next_fire_at <= statement_timestamp() AND name > %(after)s
          ORDER BY name LIMIT %(limit)s)
        UNION ALL
        (SELECT name FROM awa_cron_jobs
          WHERE paused_at IS NULL AND retired_at IS NULL
            AND next_fire_at IS NULL AND name > %(after)s
          ORDER BY name LIMIT %(limit)s)
    ) AS due ORDER BY name LIMIT %(limit)s))
 ORDER BY name;

-- name: due_schedules_all
-- Every row an evaluation pass would plan, in one read (the columns of
-- due_schedules_batch): two arms of a UNION ALL rather than an OR, so each is
-- a range scan of the partial index awa_cron_jobs_due. Parameter: max_depth.
SELECT
       /*@due_row_columns*/
  FROM awa_cron_jobs
 WHERE paused_at IS NULL AND retired_at IS NULL AND next_fire_at <= statement_timestamp()
UNION ALL
SELECT
       /*@due_row_columns*/
  FROM awa_cron_jobs
 WHERE paused_at IS NULL AND retired_at IS NULL AND next_fire_at IS NULL
 ORDER BY name;

-- name: schedule_plan_row
-- One row by name, with the columns of due_schedules_batch, due or not.
-- Parameters: name, max_depth.
SELECT
       /*@due_row_columns*/
  FROM awa_cron_jobs
 WHERE name = %(name)s;

-- name: next_slot_schedules
-- The rows at the earliest stored slot, when that slot is at most ahead
-- seconds away and not yet due (the columns of due_schedules_batch, the slot
-- and the seconds to it by the database clock): only through the partial
-- index awa_cron_jobs_due. Parameters: ahead, limit, max_depth.
SELECT
       /*@due_row_columns*/,
       next_fire_at AS slot,
       EXTRACT(EPOCH FROM next_fire_at - clock_timestamp())::float8 AS slot_in
  FROM awa_cron_jobs
 WHERE name = ANY(ARRAY(
    SELECT name FROM awa_cron_jobs
     WHERE paused_at IS NULL AND retired_at IS NULL
       AND next_fire_at = (SELECT min(next_fire_at) FROM awa_cron_jobs
                            WHERE paused_at IS NULL AND retired_at IS NULL
                              AND next_fire_at IS NOT NULL)
       AND next_fire_at > statement_timestamp()
       AND next_fire_at <= statement_timestamp() + make_interval(secs => %(ahead)s)
     ORDER BY name LIMIT %(limit)s))
 ORDER BY name;

-- name: next_due_schedule
-- Seconds until the earliest stored next fire (year 9999 is "never"), and
-- whether any row awaits a (re)computation (a concurrent change, or a CAS
-- the pass lost).
SELECT (SELECT EXTRACT(EPOCH FROM next_fire_at - statement_timestamp())::float8
          FROM awa_cron_jobs
         WHERE paused_at IS NULL AND retired_at IS NULL
           AND next_fire_at IS NOT NULL AND next_fire_at < '9999-12-31T00:00:00+00:00'
         ORDER BY next_fire_at LIMIT 1),
       EXISTS (SELECT 1 FROM awa_cron_jobs
                WHERE paused_at IS NULL AND retired_at IS NULL AND next_fire_at IS NULL);

-- name: reevaluate_parked_schedules
-- Queue parked active rows for evaluation again (next_fire_at NULL), except
-- those whose stored measures still put the payload over the limits (a
-- changed payload queues its row itself). Rows another session holds are
-- skipped, never waited for. Parameters: bytes, depth.
UPDATE awa_cron_jobs SET next_fire_at = NULL
 WHERE name IN (
    SELECT name FROM awa_cron_jobs
     WHERE parked_at IS NOT NULL AND next_fire_at IS NOT NULL
       AND paused_at IS NULL AND retired_at IS NULL
       AND COALESCE(args_bytes <= %(bytes)s AND metadata_bytes <= %(bytes)s
                    AND args_depth <= %(depth)s AND metadata_depth <= %(depth)s, true)
     ORDER BY name FOR UPDATE SKIP LOCKED);
