-- Counted subjects without counting them (issue 42). Whether the gate's table of client-keyed
-- windows has room for a new subject (CITY_GATE_SUBJECTS_MAX, lib/city/bounds/gate-windows.ts) was
-- a count of those rows in the admission's own statement: about 4 to 10 ms at 19,000 rows (EXPLAIN
-- ANALYZE on pg), paid by nearly every admission from a new address in a busy city. The rows are now
-- counted as they come and go: a trigger adds one for each client-keyed row inserted and takes one
-- for each deleted (overflow buckets aside, as before), on one of 16 stripe rows chosen by backend,
-- so two writers share a stripe only by chance and never hold two. The room is the sum of 16 rows.
-- It reads, as the count did, what was committed when the statement began.
CREATE TABLE "counted_subjects" (
	"stripe" smallint PRIMARY KEY NOT NULL,
	"n" bigint DEFAULT 0 NOT NULL
);--> statement-breakpoint
INSERT INTO "counted_subjects" ("stripe") SELECT g FROM generate_series(0, 15) g;--> statement-breakpoint
-- Whether a row of rate_windows is a counted subject: a client-keyed scope (lib/city/bounds/
-- gate-windows.ts's CLIENT_KEYED_SCOPES; tests/bounds/counted-subjects.test.ts checks they agree),
-- overflow buckets aside. One definition for the first count and both triggers (a SQL function the
-- triggers' conditions inline).
CREATE FUNCTION counted_subject(p_scope text, p_subject text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT p_scope IN ('gate-prefix', 'gate-address', 'gate-admissions-prefix', 'gate-admissions-host', 'gate-bids-prefix', 'gate-origin')
    AND p_subject NOT LIKE 'overflow/%'
$$;--> statement-breakpoint
UPDATE "counted_subjects" SET "n" = (SELECT count(*) FROM "rate_windows" WHERE counted_subject("scope", "subject")) WHERE "stripe" = 0;--> statement-breakpoint
CREATE FUNCTION counted_subjects_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE counted_subjects SET n = n + CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END WHERE stripe = pg_backend_pid() % 16;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE FUNCTION counted_subjects_reset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE counted_subjects SET n = 0;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER counted_subjects_insert AFTER INSERT ON "rate_windows" FOR EACH ROW
  WHEN (counted_subject(NEW.scope, NEW.subject)) EXECUTE FUNCTION counted_subjects_track();--> statement-breakpoint
CREATE TRIGGER counted_subjects_delete AFTER DELETE ON "rate_windows" FOR EACH ROW
  WHEN (counted_subject(OLD.scope, OLD.subject)) EXECUTE FUNCTION counted_subjects_track();--> statement-breakpoint
CREATE TRIGGER counted_subjects_truncate AFTER TRUNCATE ON "rate_windows" FOR EACH STATEMENT EXECUTE FUNCTION counted_subjects_reset();
