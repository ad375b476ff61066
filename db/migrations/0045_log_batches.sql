-- Batched integration (docs/log.md "Integration"): a write no longer locks a log's head. Its
-- transaction records its entry as pending (a row of its own, numbered by a sequence: no shared
-- row), and after its commit whoever takes the head (a try-lock) integrates every pending entry in
-- id order: their seq, prev_hash and hash, the tree's new nodes and ONE signed checkpoint per batch.
-- The ticket (random, chosen by the writer) follows the entry into its log row, so a writer finds
-- the seq its entry was given. Pending rows are only inserted and deleted (by the integrator in the
-- statement that appends them): an entry once recorded is never changed.
CREATE TABLE "log_pending" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"ticket" uuid NOT NULL,
	"event" text NOT NULL,
	"did" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL,
	CONSTRAINT "log_pending_ticket_unique" UNIQUE("ticket")
);
--> statement-breakpoint
CREATE TABLE "identity_log_pending" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"ticket" uuid NOT NULL,
	"event" text NOT NULL,
	"did" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL,
	CONSTRAINT "identity_log_pending_ticket_unique" UNIQUE("ticket")
);
--> statement-breakpoint
ALTER TABLE "residency_log" ADD COLUMN "ticket" uuid;--> statement-breakpoint
ALTER TABLE "residency_log" ADD CONSTRAINT "residency_log_ticket_unique" UNIQUE("ticket");--> statement-breakpoint
ALTER TABLE "identity_log" ADD COLUMN "ticket" uuid;--> statement-breakpoint
ALTER TABLE "identity_log" ADD CONSTRAINT "identity_log_ticket_unique" UNIQUE("ticket");--> statement-breakpoint
CREATE FUNCTION city_refuse_pending_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'a pending log entry is never changed: it is integrated (and deleted) as it was recorded';
END $$;--> statement-breakpoint
CREATE TRIGGER log_pending_no_update BEFORE UPDATE ON log_pending FOR EACH ROW EXECUTE FUNCTION city_refuse_pending_update();--> statement-breakpoint
CREATE TRIGGER identity_log_pending_no_update BEFORE UPDATE ON identity_log_pending FOR EACH ROW EXECUTE FUNCTION city_refuse_pending_update();--> statement-breakpoint
-- The head now moves once per batch: one statement-level trigger per log moves it to the batch's
-- last row (with the edge of the checkpoint of that size, whichever of the statement's inserts ran
-- first), instead of one UPDATE per row of the batch (migrations 0023, 0032).
DROP TRIGGER log_head_follow_row ON residency_log;--> statement-breakpoint
DROP FUNCTION log_head_follow_row();--> statement-breakpoint
CREATE FUNCTION log_head_follow_rows() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE log_head h SET seq = n.seq, hash = n.hash, at = n.at,
    edge = (SELECT c.edge FROM log_checkpoints c WHERE c.size = n.seq)
  FROM (SELECT seq, hash, at FROM log_head_new_rows ORDER BY seq DESC LIMIT 1) n
  WHERE h.id = 1 AND h.seq < n.seq;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER log_head_follow_rows AFTER INSERT ON residency_log
  REFERENCING NEW TABLE AS log_head_new_rows FOR EACH STATEMENT EXECUTE FUNCTION log_head_follow_rows();--> statement-breakpoint
DROP TRIGGER identity_log_head_follow_row ON identity_log;--> statement-breakpoint
DROP FUNCTION identity_log_head_follow_row();--> statement-breakpoint
CREATE FUNCTION identity_log_head_follow_rows() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE identity_log_head h SET seq = n.seq, hash = n.hash, at = n.at,
    edge = (SELECT c.edge FROM identity_log_checkpoints c WHERE c.size = n.seq)
  FROM (SELECT seq, hash, at FROM identity_log_head_new_rows ORDER BY seq DESC LIMIT 1) n
  WHERE h.id = 1 AND h.seq < n.seq;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER identity_log_head_follow_rows AFTER INSERT ON identity_log
  REFERENCING NEW TABLE AS identity_log_head_new_rows FOR EACH STATEMENT EXECUTE FUNCTION identity_log_head_follow_rows();
