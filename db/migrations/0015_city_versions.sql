CREATE TABLE "city_versions" (
	"scope" text PRIMARY KEY NOT NULL,
	"version" bigint NOT NULL
);
--> statement-breakpoint
INSERT INTO "city_versions" ("scope", "version") VALUES ('citizens', 0), ('residency_log', 0), ('ward', 0) ON CONFLICT DO NOTHING;
--> statement-breakpoint
-- A statement on a tracked table adds one to its scope's version, in the writer's own transaction,
-- only when it really changed a row: a statement that touched none (markSeen within its minute)
-- or set every column to what it held bumps nothing. Triggers, not application code, so no
-- writer (another instance, a script, psql) can forget.
CREATE OR REPLACE FUNCTION city_bump_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NOT EXISTS (SELECT 1 FROM city_new_rows) THEN RETURN NULL; END IF;
  ELSIF TG_OP = 'DELETE' THEN
    IF NOT EXISTS (SELECT 1 FROM city_old_rows) THEN RETURN NULL; END IF;
  ELSIF TG_OP = 'UPDATE' THEN
    IF NOT EXISTS (SELECT * FROM city_new_rows EXCEPT ALL SELECT * FROM city_old_rows) THEN RETURN NULL; END IF;
  END IF;
  INSERT INTO city_versions (scope, version) VALUES (TG_ARGV[0], 1)
    ON CONFLICT (scope) DO UPDATE SET version = city_versions.version + 1;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION city_track_version(tbl regclass, scope text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  base text := replace(tbl::text, '"', '');
BEGIN
  EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS city_new_rows FOR EACH STATEMENT EXECUTE FUNCTION city_bump_version(%L)',
                 base || '_version_insert', tbl, scope);
  EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s REFERENCING OLD TABLE AS city_old_rows NEW TABLE AS city_new_rows FOR EACH STATEMENT EXECUTE FUNCTION city_bump_version(%L)',
                 base || '_version_update', tbl, scope);
  EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS city_old_rows FOR EACH STATEMENT EXECUTE FUNCTION city_bump_version(%L)',
                 base || '_version_delete', tbl, scope);
  EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION city_bump_version(%L)',
                 base || '_version_truncate', tbl, scope);
END;
$$;
--> statement-breakpoint
SELECT city_track_version('citizens', 'citizens');
--> statement-breakpoint
SELECT city_track_version('residency_log', 'residency_log');
--> statement-breakpoint
SELECT city_track_version('ward_notes', 'ward');
