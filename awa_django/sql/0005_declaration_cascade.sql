-- awa_django 0005_declaration_cascade: a runtime's declaration goes with its
-- snapshot row, in the database. Snapshot cleanup deletes with plain SQL, and
-- Django's own on_delete=CASCADE only acts on ORM deletes. (Written as SQL so
-- the app keeps supporting Django 6.0, which has no database-level on_delete.)
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
    ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;
