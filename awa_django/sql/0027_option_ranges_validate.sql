-- awa_django 0027_option_ranges_validate: the checks of 0027_option_ranges.sql
-- hold for the rows already stored. Installed by migration 0027_option_ranges
-- after that file, each statement in a transaction of its own.
--
-- A row written by hand before the checks may hold a starting_deadline or a
-- jitter of 'NaN', 'Infinity' or beyond 100 years. No leader could plan it (it
-- is parked), so the value never took effect: it is cleared to the column's
-- "none" (no deadline, no jitter), which is also what 'Infinity' means, and a
-- WARNING names each schedule, column and old value. The write runs as an
-- operator's (awa.cron_admin), so the fence lets it change an owned row; the
-- owner's next sync writes its declared value again. New writes are refused by
-- the checks from the first file on, so no such row appears meanwhile.
DO $$
DECLARE
    bad record;
BEGIN
    PERFORM set_config('awa.cron_admin', 'on', true);
    FOR bad IN
        UPDATE awa_cron_jobs AS c
           SET starting_deadline = CASE WHEN c.starting_deadline > 0 AND c.starting_deadline <= 3162240000
                                        THEN c.starting_deadline END,
               jitter = CASE WHEN c.jitter >= 0 AND c.jitter <= 3162240000 THEN c.jitter ELSE 0 END
          FROM awa_cron_jobs AS old
         WHERE old.name = c.name
           AND (NOT (c.starting_deadline > 0 AND c.starting_deadline <= 3162240000)
                OR NOT (c.jitter >= 0 AND c.jitter <= 3162240000))
        RETURNING c.name, old.starting_deadline, old.jitter
    LOOP
        RAISE WARNING 'awa_django 0027: schedule % had starting_deadline % and jitter %; a value out of range (finite seconds, at most 3162240000) was cleared',
            bad.name, bad.starting_deadline, bad.jitter;
    END LOOP;
    PERFORM set_config('awa.cron_admin', '', true);
END
$$;
ALTER TABLE awa_cron_jobs VALIDATE CONSTRAINT awa_cron_jobs_starting_deadline_range_check;
ALTER TABLE awa_cron_jobs VALIDATE CONSTRAINT awa_cron_jobs_jitter_range_check;
