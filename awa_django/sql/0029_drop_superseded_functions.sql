-- awa_django 0029_drop_superseded_functions: the superseded SQL function versions
-- older than the previous one (N-1) of their family are dropped; the current and the
-- previous version of each stay (docs/explanation/sql-versions.md). No function
-- left installed calls them, and no constraint, index, default or view uses them
-- (DROP FUNCTION without CASCADE would refuse). Takes no table lock. Undone by
-- 0029_drop_superseded_functions.reverse.sql. Frozen once released (see 0002_cron_core.sql).

DROP FUNCTION awa_claim_v1(text[], integer, text);
DROP FUNCTION awa_complete_claim_v1(bigint[], integer[], jsonb[], text[], integer, text);
DROP FUNCTION awa_cron_fire_v1(jsonb);
DROP FUNCTION awa_cron_fire_v2(jsonb);
DROP FUNCTION awa_cron_fire_v3(jsonb);
DROP FUNCTION awa_cron_fire_v4(jsonb);
DROP FUNCTION awa_cron_fire_v5(jsonb);
DROP FUNCTION awa_cron_fire_v6(jsonb);
DROP FUNCTION awa_cron_schedule_fence_v1();
DROP FUNCTION awa_cron_schedule_fence_v2();
DROP FUNCTION awa_release_v1(bigint, integer, interval);
