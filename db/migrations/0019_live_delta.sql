CREATE TABLE "inbox_counts" (
	"did" text PRIMARY KEY NOT NULL,
	"unread" integer NOT NULL,
	CONSTRAINT "inbox_counts_unread_not_negative" CHECK ("inbox_counts"."unread" >= 0)
);
--> statement-breakpoint
CREATE INDEX "citizens_house_seen" ON "citizens" USING btree ("last_seen_at") WHERE "citizens"."residency_status" = 'bound' AND "citizens"."bed_id" IS NOT NULL;--> statement-breakpoint
-- Unread counts move with the messages rows, in the same transaction as the mail: a new unread
-- message adds one to its recipient, marking read (the only change messages allow) takes one away.
-- Recipients are touched in did order, so two statements never wait on each other crosswise.
CREATE FUNCTION inbox_counts_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO inbox_counts AS c (did, unread)
    SELECT to_did, count(*) FROM inbox_new_rows WHERE read_at IS NULL GROUP BY to_did ORDER BY to_did
    ON CONFLICT (did) DO UPDATE SET unread = c.unread + excluded.unread;
  ELSE
    UPDATE inbox_counts AS c SET unread = c.unread - moved.n
      FROM (SELECT o.to_did, count(*) AS n FROM inbox_old_rows o JOIN inbox_new_rows n ON n.id = o.id
            WHERE o.read_at IS NULL AND n.read_at IS NOT NULL GROUP BY o.to_did ORDER BY o.to_did) AS moved
     WHERE c.did = moved.to_did;
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER inbox_counts_insert AFTER INSERT ON messages
  REFERENCING NEW TABLE AS inbox_new_rows FOR EACH STATEMENT EXECUTE FUNCTION inbox_counts_changed();
--> statement-breakpoint
CREATE TRIGGER inbox_counts_update AFTER UPDATE ON messages
  REFERENCING OLD TABLE AS inbox_old_rows NEW TABLE AS inbox_new_rows FOR EACH STATEMENT EXECUTE FUNCTION inbox_counts_changed();
--> statement-breakpoint
-- Counted from the real rows after the triggers exist: CREATE TRIGGER locks messages against
-- writes until this migration commits, so no mail falls between the count and the triggers.
INSERT INTO inbox_counts (did, unread)
SELECT to_did, count(*) FROM messages WHERE read_at IS NULL GROUP BY to_did;
