ALTER TABLE "citizens" ADD COLUMN "name_form" smallint DEFAULT 2 NOT NULL;--> statement-breakpoint
UPDATE "citizens" SET "name_form" = 1 WHERE "name" ~ '[^!-~]' OR "origin" ~ '[^!-~]';--> statement-breakpoint
CREATE INDEX "citizens_name_form_stale" ON "citizens" USING btree ("bound_at","did") WHERE "citizens"."name_form" < 2 OR "citizens"."name_key" IS NULL;
