-- Nothing to undo: 0026_payload_measure.reverse.sql restores the checks.
SELECT 1;
