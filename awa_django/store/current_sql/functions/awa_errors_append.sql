-- awa_errors_append: the current version, awa_errors_append_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

-- p_errors (a job's errors column) with p_entry appended, within what every
-- reader decodes: at most p_max_bytes of JSON text (AWA_MAX_ARGS_BYTES) and
-- p_max_depth levels (AWA_MAX_JSON_DEPTH). The newest entries are kept and
-- the oldest dropped, replaced by one note saying how many; a stored value
-- that is not an array, or nested deeper than p_max_depth (raw SQL), is
-- replaced by a note saying why. It never walks a deep value recursively:
-- the depth is measured level by level (awa_json_depth_v1) before anything
-- is appended to it.
CREATE FUNCTION awa_errors_append_v1(p_errors jsonb, p_entry jsonb, p_max_bytes integer, p_max_depth integer)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    problem text;
    budget bigint;
    kept jsonb;
    dropped integer;
    dropped_bytes bigint;
BEGIN
    IF p_errors IS NULL OR jsonb_typeof(p_errors) <> 'array' THEN
        problem := 'they were a JSON ' || coalesce(jsonb_typeof(p_errors), 'null') || ', not an array';
    ELSIF jsonb_array_length(p_errors) = 0 THEN
        RETURN jsonb_build_array(p_entry);
    ELSIF awa_json_depth_v1(p_errors, p_max_depth) > p_max_depth THEN
        problem := format('they were nested deeper than %s levels (AWA_MAX_JSON_DEPTH=%s)',
                          p_max_depth, p_max_depth);
    END IF;
    IF problem IS NOT NULL THEN
        RETURN jsonb_build_array(jsonb_build_object(
            'exception_class_path', 'awa_django.exceptions.ErrorsDropped',
            'traceback', 'awa_django: the earlier errors of this job were dropped: ' || problem,
            'attempt', p_entry -> 'attempt'), p_entry);
    END IF;
    -- ", " separates the entries in the text every reader decodes.
    IF octet_length(p_errors::text) + octet_length(p_entry::text) + 2 <= p_max_bytes THEN
        RETURN p_errors || jsonb_build_array(p_entry);
    END IF;
    -- Keep the newest entries that fit beside the new one and the note (400 bytes at most).
    budget := p_max_bytes - octet_length(p_entry::text) - 400;
    SELECT coalesce(jsonb_agg(e.value ORDER BY e.ord) FILTER (WHERE e.tail <= budget), '[]'::jsonb),
           count(*) FILTER (WHERE e.tail > budget),
           coalesce(sum(e.size) FILTER (WHERE e.tail > budget), 0)
      INTO kept, dropped, dropped_bytes
      FROM (SELECT a.value, a.ord, a.size, sum(a.size) OVER (ORDER BY a.ord DESC) AS tail
              FROM (SELECT value, ord, octet_length(value::text) + 2 AS size
                      FROM jsonb_array_elements(p_errors) WITH ORDINALITY AS x(value, ord)) AS a) AS e;
    RETURN jsonb_build_array(jsonb_build_object(
               'exception_class_path', 'awa_django.exceptions.ErrorsDropped',
               'traceback', format('awa_django: %s earlier error entries (%s bytes) were dropped to keep '
                                   'the errors of this job within AWA_MAX_ARGS_BYTES=%s',
                                   dropped, dropped_bytes, p_max_bytes),
               'attempt', p_entry -> 'attempt'))
           || kept || jsonb_build_array(p_entry);
END
$$;
COMMENT ON FUNCTION awa_errors_append_v1(jsonb, jsonb, integer, integer) IS 'awa_django 0025_bounded_errors';
