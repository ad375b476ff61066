-- Issue 42: the gate writes nothing when it hands out a nonce. A nonce carries its issue time and
-- random bytes under a truncated MAC (lib/city/nonce-mac.ts), so the city checks it without a row;
-- gate_nonces now holds only SPENT nonces, each inserted by the statement that spends it (its
-- primary key admits one spender) and swept once it has expired. Nonces issued before this
-- migration carry no MAC: they are refused like an unknown nonce (clients GET /gate again).
DROP INDEX IF EXISTS "gate_nonces_holder";--> statement-breakpoint
DELETE FROM "gate_nonces";--> statement-breakpoint
ALTER TABLE "gate_nonces" DROP COLUMN "issued_at";--> statement-breakpoint
ALTER TABLE "gate_nonces" DROP COLUMN "consumed_at";--> statement-breakpoint
ALTER TABLE "gate_nonces" DROP COLUMN "holder";--> statement-breakpoint
-- The per-address quota of GET /gate: one theoretical arrival time (GCRA) per address instead of
-- an array of issue times. A row whose tat has passed means what no row means, so it is swept.
DROP TABLE "gate_nonce_quota";--> statement-breakpoint
CREATE TABLE "gate_nonce_quota" (
	"address" text PRIMARY KEY NOT NULL,
	"tat" timestamp with time zone NOT NULL
);--> statement-breakpoint
CREATE INDEX "gate_nonce_quota_tat" ON "gate_nonce_quota" USING btree ("tat");--> statement-breakpoint
-- The city-wide window of issued nonces (CITY_GATE_NONCES_LIVE) is retired with its one row.
DELETE FROM "rate_windows" WHERE "scope" = 'gate-nonces';
