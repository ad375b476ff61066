-- The identity log (DESIGN.md section 10, CITY-KEYS/1): a second transparency log in the residency
-- log's formats, for every change to a citizen's keys. The same tables under their own names
-- (db/schema/log-tables.ts), the same append-only triggers, the same head triggers (migration 0023).
CREATE TABLE "identity_log" (
	"seq" bigint PRIMARY KEY NOT NULL,
	"event" text NOT NULL,
	"did" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"prev_hash" text NOT NULL,
	"hash" text NOT NULL,
	CONSTRAINT "identity_log_hash_unique" UNIQUE("hash"),
	CONSTRAINT "identity_log_seq_positive" CHECK ("identity_log"."seq" > 0)
);
--> statement-breakpoint
CREATE INDEX "identity_log_at" ON "identity_log" USING btree ("at");--> statement-breakpoint
CREATE INDEX "identity_log_did" ON "identity_log" USING btree ("did");--> statement-breakpoint
CREATE TABLE "identity_log_nodes" (
	"level" smallint NOT NULL,
	"idx" bigint NOT NULL,
	"hash" text NOT NULL,
	CONSTRAINT "identity_log_nodes_level_idx_pk" PRIMARY KEY("level","idx")
);
--> statement-breakpoint
CREATE TABLE "identity_log_checkpoints" (
	"size" bigint PRIMARY KEY NOT NULL,
	"root" text NOT NULL,
	"edge" text NOT NULL,
	"note" text NOT NULL,
	"signed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "identity_log_cosignatures" (
	"witness" text NOT NULL,
	"size" bigint NOT NULL,
	"line" text NOT NULL,
	"cosigned_at" timestamp with time zone NOT NULL,
	CONSTRAINT "identity_log_cosignatures_witness_size_pk" PRIMARY KEY("witness","size")
);
--> statement-breakpoint
CREATE TABLE "identity_log_head" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"seq" bigint NOT NULL,
	"hash" text NOT NULL,
	"at" timestamp with time zone,
	"edge" text,
	CONSTRAINT "identity_log_head_one_row" CHECK ("identity_log_head"."id" = 1)
);
--> statement-breakpoint
CREATE TABLE "identity_log_identity" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"origin" text NOT NULL,
	"key_name" text NOT NULL,
	"public_key" text NOT NULL,
	"key_id" text NOT NULL,
	"vkey" text NOT NULL,
	"recorded_at" timestamp with time zone NOT NULL,
	CONSTRAINT "identity_log_identity_one_row" CHECK ("identity_log_identity"."id" = 1),
	CONSTRAINT "identity_log_identity_key_id" CHECK ("identity_log_identity"."key_id" ~ '^[0-9a-f]{8}$')
);
--> statement-breakpoint
CREATE TABLE "identity_log_verified_head" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"seq" bigint NOT NULL,
	"hash" text NOT NULL,
	"audit_after" bigint DEFAULT 0 NOT NULL,
	"verified_at" timestamp with time zone NOT NULL,
	CONSTRAINT "identity_log_verified_head_one_row" CHECK ("identity_log_verified_head"."id" = 1)
);
--> statement-breakpoint
SELECT city_make_append_only('identity_log');--> statement-breakpoint
SELECT city_make_append_only('identity_log_nodes');--> statement-breakpoint
SELECT city_make_append_only('identity_log_checkpoints');--> statement-breakpoint
SELECT city_make_append_only('identity_log_cosignatures');--> statement-breakpoint
SELECT city_make_append_only('identity_log_identity');--> statement-breakpoint
INSERT INTO "city_versions" ("scope", "version") VALUES ('identity_log', 0) ON CONFLICT DO NOTHING;--> statement-breakpoint
SELECT city_track_version('identity_log', 'identity_log');--> statement-breakpoint
-- The head of an empty log: seq 0, the genesis hash, the empty tree's edge.
INSERT INTO "identity_log_head" ("id", "seq", "hash", "at", "edge") VALUES (1, 0, repeat('0', 64), NULL, '');--> statement-breakpoint
-- Whoever inserts a row (the city's appender, the import of earlier key facts) moves the head in the
-- same statement, as log_head_follow_row does for the residency log.
CREATE FUNCTION identity_log_head_follow_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE identity_log_head SET seq = NEW.seq, hash = NEW.hash, at = NEW.at,
    edge = (SELECT c.edge FROM identity_log_checkpoints c WHERE c.size = NEW.seq)
  WHERE id = 1 AND seq < NEW.seq;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER identity_log_head_follow_row AFTER INSERT ON identity_log FOR EACH ROW EXECUTE FUNCTION identity_log_head_follow_row();--> statement-breakpoint
CREATE FUNCTION identity_log_head_follow_checkpoint() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE identity_log_head SET edge = NEW.edge WHERE id = 1 AND seq = NEW.size AND edge IS DISTINCT FROM NEW.edge;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER identity_log_head_follow_checkpoint AFTER INSERT ON identity_log_checkpoints FOR EACH ROW EXECUTE FUNCTION identity_log_head_follow_checkpoint();
