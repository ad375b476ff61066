-- Mail is history too: only read_at may change, and only from unread to read. Bodies, senders
-- and recipients are never edited, and no message is deleted or truncated away.
CREATE OR REPLACE FUNCTION city_messages_only_mark_read() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id IS DISTINCT FROM OLD.id OR NEW.from_did IS DISTINCT FROM OLD.from_did OR NEW.to_did IS DISTINCT FROM OLD.to_did
     OR NEW.body IS DISTINCT FROM OLD.body OR NEW.created_at IS DISTINCT FROM OLD.created_at
     OR OLD.read_at IS NOT NULL OR NEW.read_at IS NULL THEN
    RAISE EXCEPTION 'messages: only marking an unread message read is allowed'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER messages_only_mark_read BEFORE UPDATE ON messages FOR EACH ROW EXECUTE FUNCTION city_messages_only_mark_read();
--> statement-breakpoint
CREATE TRIGGER messages_no_delete BEFORE DELETE ON messages FOR EACH ROW EXECUTE FUNCTION city_refuse_change();
--> statement-breakpoint
CREATE TRIGGER messages_no_truncate BEFORE TRUNCATE ON messages FOR EACH STATEMENT EXECUTE FUNCTION city_refuse_change();
