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
-- index of every collection included), an event trigger adds a GIN companion on its
-- leading field (the one an equality lookup names; FerretDB filters the rest itself). Measured on 100,000 events: {_id: x} 0.9 ms instead of 39 ms, a
-- 100-event stream 8 ms instead of 42 ms; both stay flat as the log grows.

-- Fields that are only sorted or ranged, never matched by equality, get no companion:
-- it would serve no lookup and cost every insert its upkeep. The log's position is one
-- (read in order, in Python, after a lookup by type or stream).
CREATE OR REPLACE FUNCTION peertrain_ranged_fields()
RETURNS text[] LANGUAGE sql IMMUTABLE AS $fn$ SELECT ARRAY['position'] $fn$;

CREATE OR REPLACE FUNCTION peertrain_add_gin_companions(index_oid oid)
RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  def text := pg_get_indexdef(index_oid);
  tbl regclass;
  field text;
BEGIN
  IF def IS NULL OR def !~ 'USING btree' OR def !~ '_jsonb -> ' THEN
    RETURN;
  END IF;
  SELECT indrelid::regclass INTO tbl FROM pg_index WHERE indexrelid = index_oid;
  FOR field IN
    SELECT (regexp_match(def, '_jsonb -> ''([^'']+)''::text'))[1]
  LOOP
    CONTINUE WHEN field = ANY (peertrain_ranged_fields());
    EXECUTE format(
      'CREATE INDEX IF NOT EXISTS %I ON %s USING gin ((_jsonb -> %L) jsonb_path_ops)',
      left((SELECT relname FROM pg_class WHERE oid = tbl), 40) || '_'
        || left(md5(field), 8) || '_gin',
      tbl, field);
  END LOOP;
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

-- Companions made before a field was known to be ranged only.
DO $do$
DECLARE
  idx regclass;
BEGIN
  FOR idx IN
    SELECT i.indexrelid::regclass
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
    WHERE am.amname = 'gin'
      AND (regexp_match(pg_get_indexdef(i.indexrelid), '_jsonb -> ''([^'']+)''::text'))[1]
          = ANY (peertrain_ranged_fields())
  LOOP
    EXECUTE format('DROP INDEX IF EXISTS %s', idx);
  END LOOP;
END
$do$;
