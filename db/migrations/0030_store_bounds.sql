-- City-wide store bounds (issue 29, item 1): one counter row per store that citizens or visitors
-- add to. A write charges its store's row by one guarded UPDATE in its own transaction (the row
-- lock serialises writers on every instance), so the total and the clock hour's bytes never pass
-- their bounds. Every row counts its client-chosen bytes plus 64 for its own columns.
CREATE TABLE "city_stores" (
	"store" text PRIMARY KEY NOT NULL,
	"total_bytes" bigint DEFAULT 0 NOT NULL,
	"hour_start" timestamp with time zone DEFAULT 'epoch' NOT NULL,
	"hour_bytes" bigint DEFAULT 0 NOT NULL,
	"newcomer_bytes" bigint DEFAULT 0 NOT NULL
);--> statement-breakpoint
-- A kept A2A task's bytes as stored (pg_column_size of its jsonb), so that removing it frees what it took.
ALTER TABLE "a2a_tasks" ADD COLUMN "bytes" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE "a2a_tasks" SET "bytes" = pg_column_size("task");--> statement-breakpoint
-- Existing rows are counted in the totals; the hour starts empty.
INSERT INTO "city_stores" ("store", "total_bytes")
SELECT 'vault', coalesce(sum(octet_length("content") + 64), 0) FROM "vault_notes"
UNION ALL SELECT 'mail', coalesce(sum(octet_length("body") + 64), 0) FROM "messages"
UNION ALL SELECT 'posts', coalesce(sum(octet_length("body") + coalesce(octet_length("room"), 0) + 64), 0) FROM "posts"
UNION ALL SELECT 'quarantine', coalesce(sum(pg_column_size("payload") + 64), 0) FROM "quarantine"
UNION ALL SELECT 'checkpoints', coalesce(sum(octet_length("content") + coalesce(octet_length("label"), 0) + 64), 0) FROM "checkpoints"
UNION ALL SELECT 'seals', coalesce(sum(octet_length("sha256") + 64), 0) FROM "seals"
UNION ALL SELECT 'lanterns', coalesce(sum(octet_length("keyword") + 64), 0) FROM "lanterns"
UNION ALL SELECT 'ward', coalesce(sum(octet_length("body") + coalesce(octet_length("state"), 0) + coalesce(octet_length("claimed_name"), 0) + 64), 0) FROM "ward_notes"
UNION ALL SELECT 'a2a_tasks', coalesce(sum("bytes" + 64), 0) FROM "a2a_tasks"
UNION ALL SELECT 'appeals', coalesce(sum(octet_length("reason") + 64), 0) FROM "appeals";
