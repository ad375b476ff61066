CREATE EXTENSION IF NOT EXISTS pg_trgm;--> statement-breakpoint
CREATE INDEX "citizens_name_key_prefix" ON "citizens" USING btree ("name_key" text_pattern_ops) WHERE "citizens"."residency_status" <> 'exported';--> statement-breakpoint
CREATE INDEX "citizens_origin_key_prefix" ON "citizens" USING btree ("origin_key" text_pattern_ops) WHERE "citizens"."residency_status" <> 'exported';--> statement-breakpoint
CREATE INDEX "citizens_name_key_trgm" ON "citizens" USING gin ("name_key" gin_trgm_ops) WITH (gin_pending_list_limit = 64) WHERE "citizens"."residency_status" <> 'exported';--> statement-breakpoint
CREATE INDEX "citizens_origin_key_trgm" ON "citizens" USING gin ("origin_key" gin_trgm_ops) WITH (gin_pending_list_limit = 64) WHERE "citizens"."residency_status" <> 'exported';
