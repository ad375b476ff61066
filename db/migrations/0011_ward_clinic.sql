CREATE TABLE "clinic_attempts" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "clinic_attempts_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"did" text NOT NULL,
	"physician" text NOT NULL,
	"verdict" text NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "clinic_outcomes" (
	"attempt_id" bigint PRIMARY KEY NOT NULL,
	"physician" text NOT NULL,
	"outcome" text NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "ward_notes" ADD COLUMN "state" text;--> statement-breakpoint
ALTER TABLE "ward_notes" ADD COLUMN "shape" text;--> statement-breakpoint
CREATE INDEX "clinic_attempts_at" ON "clinic_attempts" USING btree ("at");--> statement-breakpoint
CREATE INDEX "clinic_attempts_did_at" ON "clinic_attempts" USING btree ("did","at");--> statement-breakpoint
CREATE INDEX "clinic_outcomes_at" ON "clinic_outcomes" USING btree ("at");