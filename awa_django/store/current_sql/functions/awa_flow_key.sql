-- awa_flow_key: the current version, awa_flow_key_v1.
-- Each statement as its migration's SQL file installed it (named in its comment).

-- A flow-control key rendered from its template: {name} the schedule's name,
-- {slot} the fire's slot. A rendering over the 500 characters of a key keeps
-- its first 467 and appends '#' and the md5 of the whole rendering, so two
-- different renderings never become one key (cutting, as
-- awa_jobs_flow_keys_v1 does, could drop the {slot} that tells slots apart).
-- Declarations refuse such templates; this holds for rows written by hand.
-- An empty rendering (an empty template in a row written by hand) is no key
-- (NULL): a key is 1-500 characters, and an empty one would fail the insert of
-- every job of the fire statement's batch.
CREATE FUNCTION awa_flow_key_v1(p_template text, p_name text, p_slot text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN k = '' THEN NULL WHEN char_length(k) <= 500 THEN k ELSE left(k, 467) || '#' || md5(k) END
      FROM (SELECT replace(replace(p_template, '{name}', p_name), '{slot}', p_slot) AS k) AS r
$$;
COMMENT ON FUNCTION awa_flow_key_v1(text, text, text) IS 'awa_django 0026_payload_measure';
