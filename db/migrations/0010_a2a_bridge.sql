CREATE TABLE "signing_keys" (
	"slot" integer PRIMARY KEY NOT NULL,
	"kid" text NOT NULL,
	"private_jwk" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "signing_keys_one_slot" CHECK ("signing_keys"."slot" = 1)
);
--> statement-breakpoint
CREATE TABLE "a2a_tasks" (
	"id" text PRIMARY KEY NOT NULL,
	"owner_hash" text NOT NULL,
	"task" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "a2a_tasks_created_at" ON "a2a_tasks" USING btree ("created_at");