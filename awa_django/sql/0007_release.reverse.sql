-- Undo 0007_release.sql.
DROP FUNCTION IF EXISTS awa_release_v1(bigint, integer, interval);
