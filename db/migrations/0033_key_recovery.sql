-- Keys that are never lost for good (CITY-KEYS/1, issue 34). A citizen's pre-rotation commitment
-- (the lowercase hex SHA-256 of each next key's 32 raw bytes; NULL: none stands) and its recovery
-- delay in hours (0: CITY-RECOVER/1 as it always was; else 24 to 168).
ALTER TABLE "citizens" ADD COLUMN "next_key_hashes" text[];--> statement-breakpoint
ALTER TABLE "citizens" ADD COLUMN "recovery_delay_hours" smallint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "citizens" ADD CONSTRAINT "citizens_recovery_delay" CHECK ("recovery_delay_hours" = 0 OR "recovery_delay_hours" BETWEEN 24 AND 168);--> statement-breakpoint
ALTER TABLE "citizens" ADD CONSTRAINT "citizens_next_key_hashes" CHECK ("next_key_hashes" IS NULL OR (cardinality("next_key_hashes") BETWEEN 1 AND 3 AND array_to_string("next_key_hashes", ',') ~ '^[0-9a-f]{64}(,[0-9a-f]{64}){0,2}$'));--> statement-breakpoint
-- A recovery opened with a delay: public while open (GET /api/recover/{did}); its history is the
-- identity log. The opener completes it with the ticket it was shown once (kept as its sha256).
-- A committed next key that opened it becomes the controller on completion.
CREATE TABLE "recoveries" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "recoveries_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"did" text NOT NULL REFERENCES "citizens"("did"),
	"state" text DEFAULT 'open' NOT NULL,
	"via" text NOT NULL,
	"ticket_hash" text NOT NULL UNIQUE,
	"next_public_key" text,
	"opened_at" timestamp with time zone NOT NULL,
	"opens_after" timestamp with time zone NOT NULL,
	"holds" smallint DEFAULT 0 NOT NULL,
	"closed_at" timestamp with time zone,
	CONSTRAINT "recoveries_state" CHECK ("state" IN ('open', 'cancelled', 'completed')),
	CONSTRAINT "recoveries_via" CHECK ("via" IN ('code', 'next-key')),
	CONSTRAINT "recoveries_holds" CHECK ("holds" BETWEEN 0 AND 2),
	CONSTRAINT "recoveries_closed" CHECK (("state" = 'open') = ("closed_at" IS NULL))
);--> statement-breakpoint
-- At most one open recovery per citizen, whatever instance opens it.
CREATE UNIQUE INDEX "recoveries_one_open" ON "recoveries" USING btree ("did") WHERE "state" = 'open';--> statement-breakpoint
CREATE INDEX "recoveries_did" ON "recoveries" USING btree ("did", "opened_at");
