-- Undo 0005_declaration_cascade.sql: back to the plain constraint Django made.
-- The constraint is found by its tables, whatever it is called.
-- Lock order of every running writer (runtime snapshots, declarations,
-- snapshot cleanup): the protocol lock, then awa_runtime_instances, then
-- awa_cron_declarations. Taking them in that order first, before the ALTER
-- locks the tables itself (declarations first, then instances through the
-- foreign key), means a migration never deadlocks with live processes.
SELECT awa_cron_protocol_lock();
LOCK TABLE awa_runtime_instances, awa_cron_declarations IN ACCESS EXCLUSIVE MODE;
DO $$
DECLARE
    fk text;
BEGIN
    SELECT conname INTO fk
      FROM pg_constraint
     WHERE conrelid = 'awa_cron_declarations'::regclass
       AND confrelid = 'awa_runtime_instances'::regclass
       AND contype = 'f';
    EXECUTE format('ALTER TABLE awa_cron_declarations DROP CONSTRAINT %I', fk);
END
$$;
ALTER TABLE awa_cron_declarations
    ADD CONSTRAINT awa_cron_declarations_instance_fk
    FOREIGN KEY (instance_id) REFERENCES awa_runtime_instances (instance_id)
    DEFERRABLE INITIALLY DEFERRED;
