-- Undo 0005_declaration_cascade.sql: back to the plain constraint Django made.
-- The constraint is found by its tables, whatever it is called.
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
