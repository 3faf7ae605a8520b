-- name: check_runtime_name_clashes
-- The names among those declared in code (a text[]) that are also
-- runtime schedules (their owner given): the declaration is ignored while they exist.
SELECT name
  FROM awa_cron_jobs
 WHERE owner_id = %(owner)s AND name = ANY(%(names)s)
 ORDER BY name;

-- name: check_installed_functions
-- The installed SQL functions among the names given (a text[]), in the current
-- schema: each one's comment (which migration file installed it) and body.
SELECT p.proname, obj_description(p.oid, 'pg_proc'), p.prosrc
  FROM pg_proc p
  JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = current_schema() AND p.proname = ANY(%(names)s);

-- name: check_job_constraint_validated
-- Whether the named check constraint of awa_jobs is validated (no row when
-- the constraint is missing).
SELECT convalidated
  FROM pg_constraint
 WHERE conrelid = 'awa_jobs'::regclass AND conname = %(name)s;
