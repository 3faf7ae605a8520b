-- Nothing to undo: 0026_payload_measure.reverse.sql restores the check.
SELECT 1;
