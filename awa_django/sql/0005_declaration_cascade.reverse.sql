-- Undo 0005_declaration_cascade.sql: back to the plain constraint Django made.
ALTER TABLE awa_cron_declarations DROP CONSTRAINT awa_cron_declarations_instance_fk;
ALTER TABLE awa_cron_declarations
    ADD CONSTRAINT awa_cron_declarations_instance_fk
    FOREIGN KEY (instance_id) REFERENCES awa_runtime_instances (instance_id)
    DEFERRABLE INITIALLY DEFERRED;
