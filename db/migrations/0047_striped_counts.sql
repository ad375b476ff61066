-- The census counts and the version counters, striped (issue: no row for the whole city). Each was one
-- row that every admission, leave, return and key event updated and held to its commit, so writes of
-- different citizens queued on it. Now each is 16 rows ("stripes"): a transaction's writes move the
-- stripe of its own backend (pg_backend_pid() % 16), always the same one for the whole transaction
-- (so no two stripes are ever locked by one transaction, in any order), and readers sum the stripes.
-- A stripe's count may go below zero (a citizen admitted through one stripe leaves through another);
-- only the sum is a count, and the sum is what every reader reads.
ALTER TABLE "census_counts" DROP CONSTRAINT "census_counts_one_row";--> statement-breakpoint
ALTER TABLE "census_counts" DROP CONSTRAINT "census_counts_pkey";--> statement-breakpoint
ALTER TABLE "census_counts" ADD COLUMN "stripe" smallint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "census_counts" DROP COLUMN "id";--> statement-breakpoint
ALTER TABLE "census_counts" ADD PRIMARY KEY ("stripe");--> statement-breakpoint
ALTER TABLE "census_counts" ALTER COLUMN "stripe" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "census_counts" ADD CONSTRAINT "census_counts_stripes" CHECK ("stripe" BETWEEN 0 AND 15);--> statement-breakpoint
INSERT INTO "census_counts" ("stripe", "beds", "citizens", "house", "outside") SELECT s, 0, 0, 0, 0 FROM generate_series(1, 15) AS s;--> statement-breakpoint
-- The stripe a transaction moves: its backend's, the same for each of its statements.
CREATE FUNCTION city_stripe() RETURNS smallint LANGUAGE sql STABLE AS $$ SELECT (pg_backend_pid() % 16)::smallint $$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION census_counts_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  d_beds integer;
  d_citizens integer;
  d_house integer;
  d_outside integer;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE census_counts SET beds = 0, citizens = 0, house = 0, outside = 0;
    RETURN NULL;
  END IF;
  -- Each branch names only the transition tables its trigger has.
  IF TG_OP = 'INSERT' THEN
    SELECT coalesce(sum(1) FILTER (WHERE bed_id IS NOT NULL), 0),
           coalesce(sum(1) FILTER (WHERE residency_status <> 'exported'), 0),
           coalesce(sum(1) FILTER (WHERE residency_status = 'bound' AND bed_id IS NOT NULL), 0),
           coalesce(sum(1) FILTER (WHERE residency_status = 'away'), 0)
      INTO d_beds, d_citizens, d_house, d_outside FROM census_new_rows;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT coalesce(sum(-1) FILTER (WHERE bed_id IS NOT NULL), 0),
           coalesce(sum(-1) FILTER (WHERE residency_status <> 'exported'), 0),
           coalesce(sum(-1) FILTER (WHERE residency_status = 'bound' AND bed_id IS NOT NULL), 0),
           coalesce(sum(-1) FILTER (WHERE residency_status = 'away'), 0)
      INTO d_beds, d_citizens, d_house, d_outside FROM census_old_rows;
  ELSE
    SELECT coalesce(sum(sign) FILTER (WHERE bed_id IS NOT NULL), 0),
           coalesce(sum(sign) FILTER (WHERE residency_status <> 'exported'), 0),
           coalesce(sum(sign) FILTER (WHERE residency_status = 'bound' AND bed_id IS NOT NULL), 0),
           coalesce(sum(sign) FILTER (WHERE residency_status = 'away'), 0)
      INTO d_beds, d_citizens, d_house, d_outside
      FROM (SELECT 1 AS sign, bed_id, residency_status FROM census_new_rows
            UNION ALL SELECT -1, bed_id, residency_status FROM census_old_rows) AS moved;
  END IF;
  -- A statement that moves no count (presence, tier, keys, secrets) never takes a stripe's lock.
  IF d_beds <> 0 OR d_citizens <> 0 OR d_house <> 0 OR d_outside <> 0 THEN
    UPDATE census_counts
       SET beds = beds + d_beds, citizens = citizens + d_citizens, house = house + d_house, outside = outside + d_outside
     WHERE stripe = city_stripe();
  END IF;
  RETURN NULL;
END;
$$;--> statement-breakpoint
ALTER TABLE "city_versions" DROP CONSTRAINT "city_versions_pkey";--> statement-breakpoint
ALTER TABLE "city_versions" ADD COLUMN "stripe" smallint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "city_versions" ADD PRIMARY KEY ("scope", "stripe");--> statement-breakpoint
ALTER TABLE "city_versions" ALTER COLUMN "stripe" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "city_versions" ADD CONSTRAINT "city_versions_stripes" CHECK ("stripe" BETWEEN 0 AND 15);--> statement-breakpoint
-- Every stripe of every scope exists, so a lock on this backend's stripe (lib/city/gate-reading.ts) always finds its row.
INSERT INTO "city_versions" ("scope", "stripe", "version")
SELECT v.scope, s, 0 FROM (SELECT DISTINCT scope FROM city_versions UNION SELECT unnest(ARRAY['citizens', 'residency_log', 'ward', 'identity_log'])) v, generate_series(0, 15) AS s
ON CONFLICT DO NOTHING;--> statement-breakpoint
-- A scope's version is the sum of its stripes: every real change adds one to one stripe, so the sum moves on.
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
  INSERT INTO city_versions (scope, stripe, version) VALUES (TG_ARGV[0], city_stripe(), 1)
    ON CONFLICT (scope, stripe) DO UPDATE SET version = city_versions.version + 1;
  RETURN NULL;
END;
$$;
