-- name: database_clock
-- Database time: every reconciliation decision uses it.
SELECT clock_timestamp();

-- name: owner_agreement
-- The owner row's agreement state (a snapshot read: plans and previews).
SELECT synced_hash, agreed_hash, agreed_since, evidence_until FROM awa_cron_owners
 WHERE owner_id = %(owner)s;

-- name: owner_agreement_for_update
-- The owner row's agreement state, locked (under the protocol lock).
SELECT synced_hash, agreed_hash, agreed_since, evidence_until FROM awa_cron_owners
 WHERE owner_id = %(owner)s
   FOR UPDATE;

-- name: protocol_blocking_instances
-- Live runtimes of the fleet that do not speak this cron protocol. A runtime
-- row counts for max(30 s, 3 x its snapshot interval).
SELECT r.instance_id FROM awa_runtime_instances AS r
 WHERE r.last_seen_at + make_interval(secs => GREATEST(30.0, r.snapshot_interval_ms * 0.003)) > %(now)s::timestamptz
   AND r.cron_protocol IS DISTINCT FROM awa_cron_protocol_version()
 ORDER BY 1;

-- name: live_declarations
-- The owner's live declarations, by instance, with when each stops counting
-- (its own or its runtime row's last sighting, whichever is older, plus the
-- freshness of max(30 s, 3 x the snapshot interval)).
SELECT d.instance_id, d.revision, d.desired_hash, d.grace_ms,
       LEAST(d.last_seen_at, r.last_seen_at)
           + make_interval(secs => GREATEST(30.0, r.snapshot_interval_ms * 0.003)) AS expires_at
  FROM awa_cron_declarations AS d
  JOIN awa_runtime_instances AS r USING (instance_id)
 WHERE d.owner_id = %(owner)s AND NOT r.shutting_down
   AND LEAST(d.last_seen_at, r.last_seen_at)
           + make_interval(secs => GREATEST(30.0, r.snapshot_interval_ms * 0.003)) > %(now)s::timestamptz
 ORDER BY d.instance_id;

-- name: published_manifest_text
-- The stored manifest of an owner and hash, as JSON text (decoded in Python
-- within the payload limits).
SELECT manifest::text FROM awa_cron_manifests
 WHERE owner_id = %(owner)s AND desired_hash = %(desired_hash)s;

-- name: stored_schedule_definitions
-- The schedules an owner owns or a manifest names, each with its definition
-- as one JSON object built in SQL: only text, integer and jsonb columns, so a
-- timestamp no Python datetime holds (a raw 'infinity') cannot fail the read
-- (every owner's reconciliation would fail on it), and the JSON comes back
-- JSON-normal. Execution policies at their default are left out, as in a
-- manifest. The keys are the definition keys of schedules.shape (REQUIRED_KEYS,
-- then POLICY_DEFAULTS); a unit test compares them.
SELECT name, owner_id, retired_at IS NOT NULL,
       (jsonb_build_object('name', name, 'cron_expr', cron_expr, 'timezone', timezone, 'kind', kind,
                           'queue', queue, 'args', args, 'priority', priority, 'max_attempts', max_attempts,
                           'tags', COALESCE(tags, ARRAY[]::text[]), 'metadata', metadata,
                           'missed_fire_policy', missed_fire_policy)
        || jsonb_strip_nulls(jsonb_build_object('overlap', NULLIF(overlap, 'allow'),
                                                'starting_deadline', starting_deadline,
                                                'jitter', NULLIF(jitter, 0),
                                                'every_seconds', every_seconds,
                                                'anchor', anchor)))::text
  FROM awa_cron_jobs
 WHERE owner_id = %(owner)s OR name = ANY(%(names)s::text[])
 ORDER BY name;

-- name: manifest_conflict_scan
-- Names of a stored manifest owned by another owner (or nobody) or retired,
-- without decoding the manifest in Python.
SELECT c.name, c.owner_id
  FROM awa_cron_manifests AS m,
       jsonb_to_recordset(m.manifest) AS d(name text)
  JOIN awa_cron_jobs AS c ON c.name = d.name
 WHERE m.owner_id = %(owner)s AND m.desired_hash = %(desired_hash)s
   AND (c.owner_id IS DISTINCT FROM %(owner)s OR c.retired_at IS NOT NULL)
 ORDER BY c.name;

-- name: record_agreement
-- The owner's agreement clock: the agreed hash, since when, and until when
-- the evidence holds.
UPDATE awa_cron_owners SET agreed_hash = %(agreed_hash)s, agreed_since = %(agreed_since)s,
       evidence_until = %(evidence_until)s
 WHERE owner_id = %(owner)s;

-- name: reset_agreement
-- Any blocker resets the owner's agreement clock.
UPDATE awa_cron_owners SET agreed_hash = NULL, agreed_since = NULL, evidence_until = NULL
 WHERE owner_id = %(owner)s;

-- name: mark_owner_synced
-- The owned rows now match this manifest hash.
UPDATE awa_cron_owners SET synced_hash = %(desired_hash)s WHERE owner_id = %(owner)s;

-- name: lock_active_owned_schedules
-- Lock the owner's active schedules among the names, in name order.
SELECT name FROM awa_cron_jobs
 WHERE owner_id = %(owner)s AND retired_at IS NULL AND name = ANY(%(names)s::text[])
 ORDER BY name
   FOR UPDATE;

-- name: retire_owned_schedules
-- Retire the owner's active schedules among the names (operator context).
UPDATE awa_cron_jobs SET retired_at = %(now)s, retired_by = %(owner)s, retired_revision = %(revision)s,
       updated_at = %(now)s
 WHERE owner_id = %(owner)s AND retired_at IS NULL AND name = ANY(%(names)s::text[]);

-- name: ensure_owner
-- The owner's row, created when missing.
INSERT INTO awa_cron_owners (owner_id) VALUES (%(owner)s) ON CONFLICT DO NOTHING;

-- name: store_manifest
-- A manifest, stored once per owner and hash; a row back when it is new.
INSERT INTO awa_cron_manifests (owner_id, desired_hash, manifest)
VALUES (%(owner)s, %(desired_hash)s, %(manifest)s::jsonb)
ON CONFLICT DO NOTHING
RETURNING 1;

-- name: upsert_declaration
-- This instance's declaration of an owner's manifest (database time).
INSERT INTO awa_cron_declarations (instance_id, owner_id, revision, desired_hash, grace_ms, last_seen_at)
VALUES (%(instance_id)s, %(owner)s, %(revision)s, %(desired_hash)s, %(grace_ms)s, clock_timestamp())
ON CONFLICT (instance_id) DO UPDATE
   SET owner_id = EXCLUDED.owner_id, revision = EXCLUDED.revision,
       desired_hash = EXCLUDED.desired_hash, grace_ms = EXCLUDED.grace_ms,
       last_seen_at = EXCLUDED.last_seen_at;

-- name: owner_ids
-- Every owner id known to the database.
SELECT owner_id FROM awa_cron_owners ORDER BY owner_id;

-- name: names_owned_elsewhere
-- Those of the names whose schedule another owner (or nobody) owns.
SELECT name FROM awa_cron_jobs
 WHERE name = ANY(%(names)s::text[]) AND owner_id IS DISTINCT FROM %(owner)s
 ORDER BY name;

-- name: active_schedule_names_of_owner
-- The names of an owner's active (not retired) schedules.
SELECT name FROM awa_cron_jobs
 WHERE owner_id = %(owner)s AND retired_at IS NULL
 ORDER BY name;
