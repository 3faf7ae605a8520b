-- Every view as the newest migration leaves it (installed by 0010_admin.sql).

-- awa_queues: every queue that has jobs, operator state or a schedule, with
-- its job counts by state and its pause. One aggregate over awa_jobs per read.
CREATE VIEW awa_queues AS
WITH depth AS (
    SELECT queue,
           count(*) FILTER (WHERE state = 'available') AS available,
           count(*) FILTER (WHERE state = 'scheduled') AS scheduled,
           count(*) FILTER (WHERE state = 'running') AS running,
           count(*) FILTER (WHERE state = 'retryable') AS retryable,
           count(*) FILTER (WHERE state = 'completed') AS completed,
           count(*) FILTER (WHERE state = 'failed') AS failed,
           count(*) FILTER (WHERE state = 'cancelled') AS cancelled
      FROM awa_jobs
     GROUP BY queue
)
SELECT q.queue,
       m.paused_at,
       m.paused_by,
       COALESCE(d.available, 0) AS available,
       COALESCE(d.scheduled, 0) AS scheduled,
       COALESCE(d.running, 0) AS running,
       COALESCE(d.retryable, 0) AS retryable,
       COALESCE(d.completed, 0) AS completed,
       COALESCE(d.failed, 0) AS failed,
       COALESCE(d.cancelled, 0) AS cancelled
  FROM (SELECT queue FROM depth
        UNION SELECT queue FROM awa_queue_meta
        UNION SELECT queue FROM awa_cron_jobs) AS q
  LEFT JOIN depth AS d USING (queue)
  LEFT JOIN awa_queue_meta AS m USING (queue);

COMMENT ON VIEW awa_queues IS 'awa_django 0010_admin';
