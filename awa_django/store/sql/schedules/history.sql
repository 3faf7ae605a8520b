-- name: schedule_slot_history
-- The most recent slot outcomes of one schedule, newest first: its jobs
-- (their slot is cron_fire_at, in the form the fire statement writes;
-- anything else, written by raw SQL, is not read as a slot), its manual
-- triggers (their creation; one no datetime holds is no slot) and the slots
-- it skipped or missed. Parameters: name, limit.
SELECT slot, outcome, job_id, blocked_by FROM (
    (SELECT (j.metadata ->> 'cron_fire_at')::timestamptz AS slot, 'enqueued' AS outcome,
            j.id AS job_id, NULL::bigint AS blocked_by
       FROM awa_jobs AS j
      WHERE j.metadata ? 'cron_name' AND (j.metadata ->> 'cron_name') = %(name)s
        AND (j.metadata ->> 'cron_fire_at') ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$'
      ORDER BY j.id DESC LIMIT %(limit)s)
    UNION ALL
    (SELECT j.created_at, 'triggered', j.id, NULL
       FROM awa_jobs AS j
      WHERE j.metadata ? 'cron_name' AND (j.metadata ->> 'cron_name') = %(name)s
        AND j.metadata -> 'triggered_manually' = 'true'::jsonb
        AND j.created_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00'
      ORDER BY j.id DESC LIMIT %(limit)s)
    UNION ALL
    (SELECT o.slot, o.outcome, NULL, o.blocked_by
       FROM awa_cron_slot_outcomes AS o
      WHERE o.name = %(name)s
      ORDER BY o.slot DESC, o.id DESC LIMIT %(limit)s)
) AS h
ORDER BY slot DESC, outcome LIMIT %(limit)s;

-- name: schedule_skip_counts
-- Slots of one schedule not enqueued, ever, by reason.
SELECT reason, count FROM awa_cron_slot_counts WHERE name = %s;

-- name: skip_totals
-- Slots not enqueued by any schedule, by reason (the metrics' counter).
SELECT reason, sum(count) FROM awa_cron_slot_counts GROUP BY reason;
