CREATE TABLE "log_head" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"seq" bigint NOT NULL,
	"hash" text NOT NULL,
	"at" timestamp with time zone,
	"edge" text,
	CONSTRAINT "log_head_one_row" CHECK ("log_head"."id" = 1)
);
--> statement-breakpoint
-- The head as the log stands now: its last row and, when the tree covers it, the edge at that size.
INSERT INTO "log_head" ("id", "seq", "hash", "at", "edge")
SELECT 1, coalesce(l.seq, 0), coalesce(l.hash, repeat('0', 64)), l.at,
  CASE WHEN l.seq IS NULL THEN '' ELSE (SELECT c.edge FROM log_checkpoints c WHERE c.size = l.seq) END
FROM (SELECT 1) one LEFT JOIN (SELECT seq, hash, at FROM residency_log ORDER BY seq DESC LIMIT 1) l ON true;--> statement-breakpoint
-- Whoever inserts a log row (the city's appender, an import) moves the head in the same statement.
-- A row-level AFTER trigger sees everything its statement wrote, so the edge is read from the
-- checkpoint of that size whether its insert ran before or after the row's.
CREATE FUNCTION log_head_follow_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE log_head SET seq = NEW.seq, hash = NEW.hash, at = NEW.at,
    edge = (SELECT c.edge FROM log_checkpoints c WHERE c.size = NEW.seq)
  WHERE id = 1 AND seq < NEW.seq;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER log_head_follow_row AFTER INSERT ON residency_log FOR EACH ROW EXECUTE FUNCTION log_head_follow_row();--> statement-breakpoint
-- A checkpoint signed at the head's size (an append, or the tree built over older rows) gives it its edge.
CREATE FUNCTION log_head_follow_checkpoint() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE log_head SET edge = NEW.edge WHERE id = 1 AND seq = NEW.size AND edge IS DISTINCT FROM NEW.edge;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER log_head_follow_checkpoint AFTER INSERT ON log_checkpoints FOR EACH ROW EXECUTE FUNCTION log_head_follow_checkpoint();
