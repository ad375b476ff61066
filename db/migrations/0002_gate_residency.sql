CREATE SEQUENCE "public"."bed_numbers" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
CREATE TABLE "residency_acceptances" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "residency_acceptances_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"did" text NOT NULL,
	"version" integer NOT NULL,
	"terms_hash" text NOT NULL,
	"actor_kind" text NOT NULL,
	"accepted_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "gate_nonces" (
	"nonce" text PRIMARY KEY NOT NULL,
	"issued_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"consumed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "rate_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"subject" text NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "ward_notes" (
	"seal" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "ward_notes_seal_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"kind" text NOT NULL,
	"did" text,
	"claimed_name" text,
	"body" text NOT NULL,
	"sealed" boolean NOT NULL,
	"filed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "residency_acceptances_once" ON "residency_acceptances" USING btree ("did","version");--> statement-breakpoint
CREATE INDEX "gate_nonces_expires_at" ON "gate_nonces" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "rate_events_window" ON "rate_events" USING btree ("scope","subject","at");--> statement-breakpoint
CREATE INDEX "ward_notes_filed_at" ON "ward_notes" USING btree ("filed_at");