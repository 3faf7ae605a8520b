-- awa_json_depth: the current version, awa_json_depth_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

-- The number of arrays and objects nested within one another in p_value
-- ([] is 1, [[1]] is 2, a scalar 0), counted level by level and given up
-- once past p_limit (it then returns p_limit + 1): a hostile value nested
-- thousands of levels costs at most p_limit + 1 rounds.
CREATE FUNCTION awa_json_depth_v1(p_value jsonb, p_limit integer) RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    level jsonb[];
    depth integer := 0;
BEGIN
    IF p_value IS NULL OR jsonb_typeof(p_value) NOT IN ('array', 'object') THEN
        RETURN 0;
    END IF;
    level := ARRAY[p_value];
    LOOP
        -- Every value holds at least one more level: count it.
        depth := depth + 1;
        IF depth > p_limit THEN
            RETURN depth;
        END IF;
        SELECT array_agg(child) INTO level
          FROM unnest(level) AS parent(value)
         CROSS JOIN LATERAL (
                SELECT e FROM jsonb_array_elements(
                    CASE WHEN jsonb_typeof(parent.value) = 'array' THEN parent.value ELSE '[]' END) AS a(e)
                UNION ALL
                SELECT e FROM jsonb_each(
                    CASE WHEN jsonb_typeof(parent.value) = 'object' THEN parent.value ELSE '{}' END) AS o(k, e)
               ) AS c(child)
         WHERE jsonb_typeof(child) IN ('array', 'object');
        IF level IS NULL THEN
            RETURN depth;
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION awa_json_depth_v1(jsonb, integer) IS 'awa_django 0015_hostile_rows';
