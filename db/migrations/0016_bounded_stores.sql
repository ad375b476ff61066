-- A poll's gate nonce is held by its citizen: one at most each, a new poll's replaces it.
ALTER TABLE "gate_nonces" ADD COLUMN "holder" text;--> statement-breakpoint
CREATE UNIQUE INDEX "gate_nonces_holder" ON "gate_nonces" USING btree ("holder") WHERE "gate_nonces"."holder" IS NOT NULL;--> statement-breakpoint
-- Each counted attempt knows when it leaves its window, so any request sweeps expired rows of every
-- subject. Rows from before this migration get the longest window in use (86400 s, appeals).
ALTER TABLE "rate_events" ADD COLUMN "expires_at" timestamp with time zone;--> statement-breakpoint
UPDATE "rate_events" SET "expires_at" = "at" + interval '86400 seconds';--> statement-breakpoint
ALTER TABLE "rate_events" ALTER COLUMN "expires_at" SET NOT NULL;--> statement-breakpoint
CREATE INDEX "rate_events_expires_at" ON "rate_events" USING btree ("expires_at");--> statement-breakpoint
-- Each owner's kept A2A tasks are capped: the oldest beyond the cap are removed on each keep.
CREATE INDEX "a2a_tasks_owner" ON "a2a_tasks" USING btree ("owner_hash","created_at");
