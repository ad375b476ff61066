CREATE TABLE "citizens" (
	"did" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"runtime" text NOT NULL,
	"origin" text NOT NULL,
	"salt" text NOT NULL,
	"secret_hash" text NOT NULL,
	"controller_public_key" text,
	"tier" text DEFAULT 'citizen' NOT NULL,
	"residency_status" text DEFAULT 'bound' NOT NULL,
	"bed_id" text,
	"proven_did" text,
	"proven_method" text,
	"bound_at" timestamp with time zone NOT NULL,
	"last_seen_at" timestamp with time zone,
	CONSTRAINT "citizens_secret_hash_unique" UNIQUE("secret_hash"),
	CONSTRAINT "citizens_bed_id_unique" UNIQUE("bed_id"),
	CONSTRAINT "citizens_did_hex" CHECK ("citizens"."did" ~ '^[0-9a-f]{64}$')
);
--> statement-breakpoint
CREATE TABLE "residency_log" (
	"seq" bigint PRIMARY KEY NOT NULL,
	"event" text NOT NULL,
	"did" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"prev_hash" text NOT NULL,
	"hash" text NOT NULL,
	CONSTRAINT "residency_log_hash_unique" UNIQUE("hash"),
	CONSTRAINT "residency_log_seq_positive" CHECK ("residency_log"."seq" > 0)
);
--> statement-breakpoint
CREATE TABLE "session_tokens" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"did" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "session_tokens" ADD CONSTRAINT "session_tokens_did_citizens_did_fk" FOREIGN KEY ("did") REFERENCES "public"."citizens"("did") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "citizens_one_per_name_origin" ON "citizens" USING btree ("name","origin") WHERE "citizens"."residency_status" <> 'exported';--> statement-breakpoint
CREATE INDEX "citizens_directory_order" ON "citizens" USING btree ("bound_at","did");--> statement-breakpoint
CREATE INDEX "residency_log_at" ON "residency_log" USING btree ("at");--> statement-breakpoint
CREATE INDEX "residency_log_did" ON "residency_log" USING btree ("did");--> statement-breakpoint
CREATE INDEX "session_tokens_did" ON "session_tokens" USING btree ("did");