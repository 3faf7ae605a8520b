-- Undo 0027_option_ranges_validate.sql: nothing to undo (0027_option_ranges.reverse.sql
-- drops the checks; a value cleared stays cleared).
SELECT 1;
