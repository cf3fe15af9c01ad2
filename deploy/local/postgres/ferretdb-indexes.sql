SET client_min_messages = warning;
-- Index companions for FerretDB 1.24 on PostgreSQL, installed in FerretDB's database by
-- deploy/local/postgres.sh (idempotent).
--
-- FerretDB pushes an equality filter {field: value} down as
--     SELECT _jsonb FROM <table> WHERE _jsonb->$1 @> $2
-- and creates each MongoDB index as a btree on (_jsonb -> 'field'). A btree cannot
-- answer @>, so every pushed-down lookup scanned its whole table: 40 ms at 100,000
-- events, growing with the log. A GIN index (jsonb_path_ops) on the same expression
-- does answer it, once the planner sees the field name as a constant: with
-- plan_cache_mode = force_custom_plan (set on the server's command line) every
-- execution of FerretDB's prepared statements is planned with its parameters.
--
-- So: whenever FerretDB creates a btree index on _jsonb expressions (the implicit _id
-- index of every collection included), an event trigger adds a GIN companion on the
-- same fields, one column each (a multi-column GIN answers a lookup on any of its
-- columns, and intersects them when a lookup names several). Measured on 100,000
-- events: {_id: x} 0.9 ms instead of 39 ms, a 100-event stream 8 ms instead of 42 ms;
-- both stay flat as the log grows. The event log checks an append's expected version
-- with {stream, seq}: on a companion of the stream alone PostgreSQL read every event
-- of the stream to find the one (9.3 ms for a 10,000-event stream, growing with the
-- job); on (stream, seq) it is 0.06 ms whatever the stream's length.

-- Fields that are only sorted or ranged, never matched by equality, get no companion:
-- it would serve no lookup and cost every insert its upkeep. The log's position is one
-- (read in order, in Python, after a lookup by type or stream); a read model's created_at
-- is another (sorted after a lookup by owner).
CREATE OR REPLACE FUNCTION peertrain_ranged_fields()
RETURNS text[] LANGUAGE sql IMMUTABLE AS $fn$ SELECT ARRAY['position', 'created_at'] $fn$;

-- The _jsonb fields an index is on, in its order (the one parse of index definitions).
CREATE OR REPLACE FUNCTION peertrain_index_fields(index_oid oid)
RETURNS text[] LANGUAGE sql STABLE AS $fn$
  SELECT array_agg(m[1] ORDER BY n)
  FROM regexp_matches(pg_get_indexdef(index_oid), '_jsonb -> ''([^'']+)''::text', 'g')
       WITH ORDINALITY AS r(m, n)
$fn$;

CREATE OR REPLACE FUNCTION peertrain_add_gin_companions(index_oid oid)
RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  def text := pg_get_indexdef(index_oid);
  tbl regclass;
  fields text[];
BEGIN
  IF def IS NULL OR def !~ 'USING btree' OR def !~ '_jsonb -> ' THEN
    RETURN;
  END IF;
  SELECT indrelid::regclass INTO tbl FROM pg_index WHERE indexrelid = index_oid;
  SELECT array_agg(f ORDER BY n) INTO fields
  FROM unnest(peertrain_index_fields(index_oid)) WITH ORDINALITY AS u(f, n)
  WHERE NOT f = ANY (peertrain_ranged_fields());
  IF fields IS NULL THEN
    RETURN;
  END IF;
  -- One field keeps the name companions always had, so a rerun finds them.
  EXECUTE format(
    'CREATE INDEX IF NOT EXISTS %I ON %s USING gin (%s)',
    left((SELECT relname FROM pg_class WHERE oid = tbl), 40) || '_'
      || left(md5(array_to_string(fields, ',')), 8) || '_gin',
    tbl,
    (SELECT string_agg(format('(_jsonb -> %L) jsonb_path_ops', f), ', ' ORDER BY n)
     FROM unnest(fields) WITH ORDINALITY AS u(f, n)));
END
$fn$;

CREATE OR REPLACE FUNCTION peertrain_on_create_index()
RETURNS event_trigger LANGUAGE plpgsql AS $fn$
DECLARE
  cmd record;
BEGIN
  FOR cmd IN SELECT objid FROM pg_event_trigger_ddl_commands()
             WHERE command_tag = 'CREATE INDEX' AND object_type = 'index'
  LOOP
    PERFORM peertrain_add_gin_companions(cmd.objid);
  END LOOP;
END
$fn$;

DROP EVENT TRIGGER IF EXISTS peertrain_gin_companions;
CREATE EVENT TRIGGER peertrain_gin_companions ON ddl_command_end
  WHEN TAG IN ('CREATE INDEX', 'CREATE TABLE')
  EXECUTE FUNCTION peertrain_on_create_index();

-- Collections created before the trigger existed.
SELECT peertrain_add_gin_companions(i.indexrelid)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
WHERE am.amname = 'btree' AND pg_get_indexdef(i.indexrelid) LIKE '%_jsonb -> %';

-- Companions an earlier version of this file made and this one would not: one on a
-- field known since to be ranged only, and a one-column one where a companion of
-- several columns leads with the same field on the same table (it answers the same
-- lookups, so the one-column one would only cost every insert).
DO $do$
DECLARE
  idx regclass;
BEGIN
  FOR idx IN
    WITH gin AS (
      SELECT i.indexrelid, i.indrelid, i.indnatts,
             (peertrain_index_fields(i.indexrelid))[1] AS leading
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
      WHERE am.amname = 'gin'
    )
    SELECT one.indexrelid::regclass
    FROM gin one
    WHERE one.leading = ANY (peertrain_ranged_fields())
       OR (one.indnatts = 1 AND EXISTS (
             SELECT 1 FROM gin many
             WHERE many.indrelid = one.indrelid AND many.indnatts > 1
               AND many.leading = one.leading))
  LOOP
    EXECUTE format('DROP INDEX IF EXISTS %s', idx);
  END LOOP;
END
$do$;
