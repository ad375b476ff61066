ALTER TABLE "citizens" ADD COLUMN "name_key" text;--> statement-breakpoint
ALTER TABLE "citizens" ADD COLUMN "origin_key" text;--> statement-breakpoint
CREATE UNIQUE INDEX "citizens_one_per_name_origin_key" ON "citizens" USING btree ("name_key","origin_key") WHERE "citizens"."residency_status" <> 'exported';