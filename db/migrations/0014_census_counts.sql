CREATE TABLE "gate_nonce_quota" (
	"address" text PRIMARY KEY NOT NULL,
	"issued_at" timestamp with time zone[] NOT NULL,
	"last_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "census_counts" (
	"id" boolean PRIMARY KEY DEFAULT true NOT NULL,
	"beds" integer NOT NULL,
	"citizens" integer NOT NULL,
	"house" integer NOT NULL,
	"outside" integer NOT NULL,
	CONSTRAINT "census_counts_one_row" CHECK ("census_counts"."id")
);
--> statement-breakpoint
CREATE INDEX "gate_nonce_quota_last_at" ON "gate_nonce_quota" USING btree ("last_at");--> statement-breakpoint
-- The census counts move with the citizens rows, in the same transaction as the write: each
-- statement on citizens adds what its new rows count and takes away what its old rows counted.
CREATE FUNCTION census_counts_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  d_beds integer;
  d_citizens integer;
  d_house integer;
  d_outside integer;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE census_counts SET beds = 0, citizens = 0, house = 0, outside = 0 WHERE id;
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
  -- A statement that moves no count (presence, tier, keys, secrets) never takes the row's lock.
  IF d_beds <> 0 OR d_citizens <> 0 OR d_house <> 0 OR d_outside <> 0 THEN
    UPDATE census_counts
       SET beds = beds + d_beds, citizens = citizens + d_citizens, house = house + d_house, outside = outside + d_outside
     WHERE id;
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER census_counts_insert AFTER INSERT ON citizens
  REFERENCING NEW TABLE AS census_new_rows FOR EACH STATEMENT EXECUTE FUNCTION census_counts_changed();
--> statement-breakpoint
CREATE TRIGGER census_counts_update AFTER UPDATE ON citizens
  REFERENCING OLD TABLE AS census_old_rows NEW TABLE AS census_new_rows FOR EACH STATEMENT EXECUTE FUNCTION census_counts_changed();
--> statement-breakpoint
CREATE TRIGGER census_counts_delete AFTER DELETE ON citizens
  REFERENCING OLD TABLE AS census_old_rows FOR EACH STATEMENT EXECUTE FUNCTION census_counts_changed();
--> statement-breakpoint
CREATE TRIGGER census_counts_truncate AFTER TRUNCATE ON citizens
  FOR EACH STATEMENT EXECUTE FUNCTION census_counts_changed();
--> statement-breakpoint
-- The one row is kept: deleting or truncating it is refused (TRUNCATE citizens zeroes its counts).
CREATE FUNCTION census_counts_keep_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'census_counts keeps its one row: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
--> statement-breakpoint
CREATE TRIGGER census_counts_no_delete BEFORE DELETE ON census_counts
  FOR EACH ROW EXECUTE FUNCTION census_counts_keep_row();
--> statement-breakpoint
CREATE TRIGGER census_counts_no_truncate BEFORE TRUNCATE ON census_counts
  FOR EACH STATEMENT EXECUTE FUNCTION census_counts_keep_row();
--> statement-breakpoint
-- Counted from the real rows after the triggers exist: CREATE TRIGGER locks citizens against
-- writes until this migration commits, so no write falls between the count and the triggers.
INSERT INTO census_counts (id, beds, citizens, house, outside)
SELECT true,
       count(*) FILTER (WHERE bed_id IS NOT NULL),
       count(*) FILTER (WHERE residency_status <> 'exported'),
       count(*) FILTER (WHERE residency_status = 'bound' AND bed_id IS NOT NULL),
       count(*) FILTER (WHERE residency_status = 'away')
FROM citizens;
--> statement-breakpoint
-- The per-address nonce counts move from rate_events to gate_nonce_quota, the last hour's kept.
INSERT INTO gate_nonce_quota (address, issued_at, last_at)
SELECT subject, array_agg(at ORDER BY at), max(at)
FROM rate_events WHERE scope = 'gate-nonce-address' AND at > now() - interval '1 hour'
GROUP BY subject;
--> statement-breakpoint
DELETE FROM rate_events WHERE scope = 'gate-nonce-address';
