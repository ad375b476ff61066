-- The log's identity (issue 29, item 9): its origin and signing key are properties of the database,
-- kept with the tree, not of each instance's configuration. One row, written once by the first
-- instance whose configured key verifies the tree as it stands (lib/city/residency-log/identity.ts); an
-- instance whose configuration disagrees refuses to append. Append-only: a second identity for the
-- same tree is a fork.
CREATE TABLE "log_identity" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"origin" text NOT NULL,
	"key_name" text NOT NULL,
	"public_key" text NOT NULL,
	"key_id" text NOT NULL,
	"vkey" text NOT NULL,
	"recorded_at" timestamp with time zone NOT NULL,
	CONSTRAINT "log_identity_one_row" CHECK ("log_identity"."id" = 1),
	CONSTRAINT "log_identity_key_id" CHECK ("log_identity"."key_id" ~ '^[0-9a-f]{8}$')
);
--> statement-breakpoint
SELECT city_make_append_only('log_identity');
