CREATE TABLE "rate_windows" (
	"scope" text NOT NULL,
	"subject" text NOT NULL,
	"ats" timestamp with time zone[] NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"allowed" boolean NOT NULL,
	CONSTRAINT "rate_windows_scope_subject_pk" PRIMARY KEY("scope","subject")
);
--> statement-breakpoint
CREATE INDEX "rate_windows_expires_at" ON "rate_windows" USING btree ("expires_at");--> statement-breakpoint
-- The attempts still in their windows move over, one row per window, so no limit resets at deploy.
INSERT INTO "rate_windows" ("scope", "subject", "ats", "expires_at", "allowed")
SELECT "scope", "subject", array_agg("at" ORDER BY "at"), max("expires_at"), true
FROM "rate_events" WHERE "expires_at" > now() GROUP BY "scope", "subject";--> statement-breakpoint
DROP TABLE "rate_events" CASCADE;
