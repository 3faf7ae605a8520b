-- name: jobs_btree_indexes
-- Each valid btree index of awa_jobs: its name, size, predicate and key expressions.
SELECT c.relname, pg_relation_size(c.oid), pg_get_expr(i.indpred, i.indrelid),
       ARRAY(SELECT pg_get_indexdef(i.indexrelid, k, true)
               FROM generate_series(1, i.indnkeyatts) AS k ORDER BY k)
  FROM pg_index AS i
  JOIN pg_class AS c ON c.oid = i.indexrelid
  JOIN pg_am AS am ON am.oid = c.relam
 WHERE i.indrelid = 'awa_jobs'::regclass AND i.indisvalid AND i.indisready AND am.amname = 'btree'
 ORDER BY c.relname;

-- name: jobs_index_build_under_way
-- An index of awa_jobs being built or rebuilt now (by anyone: an operator's
-- REINDEX CONCURRENTLY shows as an invalid _ccnew index while it runs).
SELECT EXISTS (SELECT 1 FROM pg_stat_progress_create_index WHERE relid = 'awa_jobs'::regclass);

-- name: jobs_index_leftovers
-- The invalid copies of awa_jobs' indexes that interrupted rebuilds left.
SELECT c.relname
  FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
 WHERE i.indrelid = 'awa_jobs'::regclass AND NOT i.indisvalid AND c.relname ~ '_ccnew[0-9]*$';

-- name: jobs_heap_pages
-- The pages of awa_jobs' heap.
SELECT pg_relation_size('awa_jobs') / current_setting('block_size')::int;

-- name: relation_size
-- The size in bytes of the named relation (an index just rebuilt).
SELECT pg_relation_size(%(relation)s::regclass);
