-- name: old_client_transaction
-- Whether another client transaction of this database has been open the given
-- seconds or more (it holds cleanup back), and the server's time.
SELECT EXISTS (SELECT 1
                 FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()
                  AND backend_type = 'client backend' AND backend_xmin IS NOT NULL
                  AND xact_start < clock_timestamp() - make_interval(secs => %(seconds)s::float8)),
       clock_timestamp();

-- name: cleanup_holders
-- The client transactions of this database (but this one) open the given
-- seconds or more, which hold cleanup back, oldest first.
SELECT pid, usename, application_name, state, xact_start,
       EXTRACT(EPOCH FROM clock_timestamp() - xact_start)::float8
  FROM pg_stat_activity
 WHERE datname = current_database() AND pid <> pg_backend_pid()
   AND backend_type = 'client backend' AND backend_xmin IS NOT NULL
   AND xact_start < clock_timestamp() - make_interval(secs => %(seconds)s::float8)
 ORDER BY xact_start;

-- name: jobs_tuple_counts
-- Live and dead row versions of awa_jobs, and the VACUUMs run by hand on it, as counted.
SELECT n_live_tup, n_dead_tup, vacuum_count FROM pg_stat_user_tables WHERE relid = 'awa_jobs'::regclass;

-- name: jobs_vacuum_under_way
-- A vacuum of awa_jobs under way that began after the given moment (any, when NULL).
SELECT EXISTS (SELECT 1 FROM pg_stat_progress_vacuum AS p
                 JOIN pg_stat_activity AS a ON a.pid = p.pid
                WHERE p.relid = 'awa_jobs'::regclass
                  AND (%(after)s::timestamptz IS NULL OR a.xact_start > %(after)s::timestamptz));

-- name: may_vacuum_jobs
-- Whether this role owns awa_jobs (through a role it is a member of) or is a superuser.
SELECT pg_has_role(c.relowner, 'USAGE')
       OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
  FROM pg_class AS c WHERE c.oid = 'awa_jobs'::regclass;

-- name: may_maintain_jobs
-- Whether this role holds the MAINTAIN privilege on awa_jobs (PostgreSQL 17 and later).
SELECT has_table_privilege('awa_jobs', 'MAINTAIN');

-- name: vacuum_jobs
-- A VACUUM of awa_jobs, unthrottled as one typed by hand (it cannot be prepared
-- nor run inside a transaction block).
VACUUM awa_jobs;
