-- What the admin's job list reads beside its own queryset: expressions it
-- annotates the changelist with (named *_expression: a fragment over awa_jobs,
-- not a statement; positional parameters, as Django's RawSQL takes them), the
-- table's size estimate, and the choices of its filters.
--
-- The latest attempt's error is read in SQL so the list never loads errors
-- (every attempt's traceback, any size). Errors stored larger than
-- AWA_MAX_ARGS_BYTES (only raw SQL writes them) are not read at all:
-- pg_column_size is the stored size, and awa_jobs.errors is stored
-- uncompressed (0025_bounded_errors), so it is the real one.

-- name: job_last_error_class_expression
-- The latest attempt's exception class. Parameter: the errors size limit.
CASE WHEN pg_column_size(awa_jobs.errors) <= %s
     THEN left(awa_jobs.errors -> -1 ->> 'exception_class_path', 300)
     ELSE 'not read: errors stored over AWA_MAX_ARGS_BYTES' END

-- name: job_last_error_tail_expression
-- The end of the latest attempt's traceback, where Python writes the
-- exception's own lines. Parameters: the errors size limit, the characters kept.
CASE WHEN pg_column_size(awa_jobs.errors) <= %s THEN right(awa_jobs.errors -> -1 ->> 'traceback', %s) END

-- name: job_errors_text_expression
-- What the search reads of a job's errors (any JSON, of any size when written
-- by raw SQL): of its latest entries, the class and the end of the traceback;
-- nothing of errors stored over the size limit (such a job is found by its
-- task path or schedule only), so a search costs the same whatever the rows
-- hold (bench/admin_search.py). Parameters: the errors size limit, the
-- traceback characters kept, the entries searched.
CASE WHEN pg_column_size(awa_jobs.errors) <= %s THEN
    CASE WHEN jsonb_typeof(awa_jobs.errors) = 'array' THEN
        (SELECT string_agg(concat_ws(' ', left(e ->> 'exception_class_path', 300),
                                     right(e ->> 'traceback', %s)), ' ')
           FROM jsonb_array_elements(awa_jobs.errors) WITH ORDINALITY AS a(e, n)
          WHERE n > jsonb_array_length(awa_jobs.errors) - %s)
    END
END

-- name: job_duration_expression
-- How long the latest attempt ran, or has been running; NULL when a timestamp
-- no datetime holds is involved (PostgreSQL refuses to subtract 'infinity').
-- The range is awa_django.db.timestamps.TIMESTAMP_LOW/HIGH.
CASE WHEN NOT coalesce(awa_jobs.attempted_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00', FALSE)
          OR NOT coalesce(awa_jobs.finished_at BETWEEN '0001-01-02 00:00:00+00' AND '9999-12-30 23:59:59.999999+00', TRUE)
     THEN NULL
     WHEN awa_jobs.finished_at IS NOT NULL THEN awa_jobs.finished_at - awa_jobs.attempted_at
     WHEN awa_jobs.state = 'running' THEN statement_timestamp() - awa_jobs.attempted_at
END

-- name: jobs_estimated_count
-- awa_jobs' row count as last estimated by autovacuum or ANALYZE (-1: never).
SELECT reltuples::bigint FROM pg_class WHERE oid = 'awa_jobs'::regclass;

-- name: queue_names_known
-- Queues known without scanning jobs: operated on, or scheduled.
SELECT queue FROM awa_queue_meta
 UNION
SELECT queue FROM awa_cron_jobs;

-- name: schedule_kinds
-- The task kinds of the schedules.
SELECT DISTINCT kind FROM awa_cron_jobs;

-- name: first_schedule_names
-- The first schedule names in name order, up to a limit.
SELECT name FROM awa_cron_jobs ORDER BY name LIMIT %(limit)s;
