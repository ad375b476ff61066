-- The poll's room-replies count (lib/city/live-delta.ts) starts from the caller's own room posts
-- and looks up, for each, the replies newer than the cursor: both reads are index ranges, so a
-- poll reads the caller's own rows and the news since its cursor, never the whole posts table.
CREATE INDEX "posts_room_by_did" ON "posts" USING btree ("did", "id") WHERE "posts"."board" = 'room';--> statement-breakpoint
CREATE INDEX "posts_room_replies" ON "posts" USING btree ("reply_to", "created_at") WHERE "posts"."board" = 'room' AND "posts"."reply_to" IS NOT NULL;
