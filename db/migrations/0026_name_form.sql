-- The normal form of names (lib/city/names.ts) now removes what shows nothing or blank space: the keys of rows admitted before are of form 1 and are recomputed by the backfill that runs after the migrations (backfillNameKeys); new rows are written in form 2 (the default). Adding a column with a constant default rewrites no row.
ALTER TABLE "citizens" ADD COLUMN "name_form" smallint DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "citizens" ALTER COLUMN "name_form" SET DEFAULT 2;--> statement-breakpoint
CREATE INDEX "citizens_name_form_stale" ON "citizens" USING btree ("bound_at","did") WHERE "citizens"."name_form" < 2 OR "citizens"."name_key" IS NULL;
