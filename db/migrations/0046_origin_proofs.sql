-- Origins proven, not claimed (CITY-ORIGIN/1, docs/origin-proofs.md): a citizen's standing (or
-- lapsed) proof that it speaks for the domain of its origin, on its own row so that every
-- directory row carries it with no join. All four are set together by a proof and cleared together
-- when the citizen drops it; a lapsed proof stays (shown lapsed: origin_expires_at past) until
-- verified again or dropped. Adding nullable columns rewrites no row.
ALTER TABLE "citizens" ADD COLUMN "origin_domain" text;--> statement-breakpoint
ALTER TABLE "citizens" ADD COLUMN "origin_method" text;--> statement-breakpoint
ALTER TABLE "citizens" ADD COLUMN "origin_verified_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "citizens" ADD COLUMN "origin_expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "citizens" ADD CONSTRAINT "citizens_origin_proof" CHECK (
  ("origin_domain" IS NULL AND "origin_method" IS NULL AND "origin_verified_at" IS NULL AND "origin_expires_at" IS NULL)
  OR ("origin_domain" IS NOT NULL AND "origin_method" IN ('https', 'dns') AND "origin_verified_at" IS NOT NULL AND "origin_expires_at" > "origin_verified_at"));--> statement-breakpoint
-- GET /api/peers?origin_proven=true walks only the citizens with a proof, in the directory's order.
CREATE INDEX "citizens_origin_proven_order" ON "citizens" USING btree ("bound_at","did") WHERE "origin_expires_at" IS NOT NULL AND "residency_status" <> 'exported';
