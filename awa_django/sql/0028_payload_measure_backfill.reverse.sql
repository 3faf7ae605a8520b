-- Nothing to undo: 0026_payload_measure.reverse.sql drops the measure columns.
SELECT 1;
