-- awa_django 0027_option_ranges: a schedule row holds only the numbers a
-- declaration accepts (awa_django.declarations.ranges.RANGES). Installed by
-- migration 0027_option_ranges (not atomic: this file adds the checks, briefly
-- locking awa_cron_jobs, and 0027_option_ranges_validate.sql fixes and checks the
-- rows already stored in a transaction of its own), undone by
-- 0027_option_ranges.reverse.sql.
--
-- The checks of 0018 (starting_deadline > 0, jitter >= 0) let 'NaN' and
-- 'Infinity' through (PostgreSQL orders NaN above every number): such a row
-- cannot be planned, and its value is not JSON. Both are finite seconds, at
-- most 100 years (3162240000 s, as the declaration's bound); every_seconds, an
-- integer, is bounded by its type.
ALTER TABLE awa_cron_jobs
    ADD CONSTRAINT awa_cron_jobs_starting_deadline_range_check
        CHECK (starting_deadline IS NULL OR (starting_deadline > 0 AND starting_deadline <= 3162240000)) NOT VALID,
    ADD CONSTRAINT awa_cron_jobs_jitter_range_check
        CHECK (jitter >= 0 AND jitter <= 3162240000) NOT VALID;
