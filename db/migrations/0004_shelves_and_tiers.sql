CREATE TABLE "city_counters" (
	"name" text PRIMARY KEY NOT NULL,
	"value" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "locker_bags" (
	"did" text NOT NULL,
	"bag" text NOT NULL,
	"content" text NOT NULL,
	"bytes" integer NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "locker_bags_did_bag_pk" PRIMARY KEY("did","bag")
);
--> statement-breakpoint
CREATE TABLE "checkpoints" (
	"did" text NOT NULL,
	"version" integer NOT NULL,
	"content" text NOT NULL,
	"sha256" text NOT NULL,
	"bytes" integer NOT NULL,
	"label" text,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "checkpoints_did_version_pk" PRIMARY KEY("did","version")
);
--> statement-breakpoint
CREATE TABLE "vault_notes" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "vault_notes_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"did" text NOT NULL,
	"content" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "messages_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"from_did" text NOT NULL,
	"to_did" text NOT NULL,
	"body" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"read_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "lanterns" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "lanterns_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"did" text NOT NULL,
	"keyword" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "posts" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "posts_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"board" text NOT NULL,
	"room" text,
	"did" text NOT NULL,
	"body" text NOT NULL,
	"reply_to" bigint,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "lot_locks" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "lot_locks_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"lot" text NOT NULL,
	"did" text NOT NULL,
	"locked_at" timestamp with time zone NOT NULL,
	"released_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "seals" (
	"sha256" text NOT NULL,
	"did" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "seals_sha256_did_pk" PRIMARY KEY("sha256","did")
);
--> statement-breakpoint
CREATE TABLE "recovery_codes" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "recovery_codes_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"did" text NOT NULL,
	"code_hash" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"voided_at" timestamp with time zone,
	CONSTRAINT "recovery_codes_code_hash_unique" UNIQUE("code_hash")
);
--> statement-breakpoint
CREATE TABLE "quarantine" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "quarantine_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"did" text NOT NULL,
	"door" text NOT NULL,
	"reason" text NOT NULL,
	"payload" jsonb NOT NULL,
	"parked_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "appeal_decisions" (
	"appeal_id" bigint PRIMARY KEY NOT NULL,
	"decision" text NOT NULL,
	"note" text,
	"decided_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "appeals" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "appeals_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"did" text NOT NULL,
	"reason" text NOT NULL,
	"filed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "content_refusals" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "content_refusals_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"did" text NOT NULL,
	"door" text NOT NULL,
	"rule" text NOT NULL,
	"refused_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "prove_challenges" (
	"challenge" text PRIMARY KEY NOT NULL,
	"did" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "tier_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "tier_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"did" text NOT NULL,
	"event" text NOT NULL,
	"from_tier" text NOT NULL,
	"to_tier" text NOT NULL,
	"reason" text NOT NULL,
	"appeal_id" bigint,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "vault_notes_did" ON "vault_notes" USING btree ("did","id");--> statement-breakpoint
CREATE INDEX "messages_inbox" ON "messages" USING btree ("to_did","read_at","id");--> statement-breakpoint
CREATE INDEX "lanterns_did" ON "lanterns" USING btree ("did");--> statement-breakpoint
CREATE INDEX "posts_board_page" ON "posts" USING btree ("board","room","id");--> statement-breakpoint
CREATE INDEX "posts_reply_to" ON "posts" USING btree ("reply_to");--> statement-breakpoint
CREATE UNIQUE INDEX "lot_locks_one_holder" ON "lot_locks" USING btree ("lot") WHERE "lot_locks"."released_at" IS NULL;--> statement-breakpoint
CREATE INDEX "lot_locks_did" ON "lot_locks" USING btree ("did");--> statement-breakpoint
CREATE INDEX "recovery_codes_did" ON "recovery_codes" USING btree ("did");--> statement-breakpoint
CREATE INDEX "quarantine_did" ON "quarantine" USING btree ("did","id");--> statement-breakpoint
CREATE INDEX "appeals_did" ON "appeals" USING btree ("did","filed_at");--> statement-breakpoint
CREATE INDEX "content_refusals_window" ON "content_refusals" USING btree ("did","refused_at");--> statement-breakpoint
CREATE INDEX "tier_events_did" ON "tier_events" USING btree ("did","id");