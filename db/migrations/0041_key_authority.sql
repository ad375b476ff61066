-- Who outranks whom (CITY-KEYS/1): a step that weakens a citizen's protections waits out the delay
-- standing when it was asked, in public, as an open row of "recoveries": a recovery (a new secret,
-- opened by a code, a committed next key, or now the controller key) or a lowering of the delay
-- (asked by the secret or the controller key). `via` says which credential asked, and so which
-- credentials outrank it and may cancel it.
ALTER TABLE "recoveries" ADD COLUMN "step" text DEFAULT 'recovery' NOT NULL;--> statement-breakpoint
ALTER TABLE "recoveries" ADD COLUMN "lower_to" smallint;--> statement-breakpoint
ALTER TABLE "recoveries" DROP CONSTRAINT "recoveries_via";--> statement-breakpoint
ALTER TABLE "recoveries" ADD CONSTRAINT "recoveries_via" CHECK ("via" IN ('code', 'next-key', 'controller', 'secret'));--> statement-breakpoint
ALTER TABLE "recoveries" ADD CONSTRAINT "recoveries_step" CHECK (
  ("step" = 'recovery' AND "lower_to" IS NULL AND "via" IN ('code', 'next-key', 'controller'))
  OR ("step" = 'lower-delay' AND "via" IN ('secret', 'controller') AND ("lower_to" = 0 OR "lower_to" BETWEEN 24 AND 167)));--> statement-breakpoint
-- A signature reaches the city at most 30 s after it was made (CITY-SIG/1), so a key rotated away
-- can have made a valid signature for 35 s at most (5 s of clock skew): its exp, which was 305 s.
CREATE OR REPLACE FUNCTION city_follow_request_keys() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF NEW.controller_public_key IS NOT DISTINCT FROM OLD.controller_public_key THEN
      RETURN NEW;
    END IF;
    DELETE FROM request_keys WHERE did = NEW.did AND exp IS NOT NULL AND exp < now();
    UPDATE request_keys SET rotated_at = now(), exp = now() + interval '35 seconds'
      WHERE did = NEW.did AND exp IS NULL;
  END IF;
  IF NEW.controller_public_key IS NOT NULL THEN
    INSERT INTO request_keys (did, thumbprint, public_key, nbf)
      VALUES (NEW.did, city_key_thumbprint(NEW.controller_public_key), NEW.controller_public_key, now())
      ON CONFLICT (did, thumbprint) DO UPDATE SET nbf = excluded.nbf, rotated_at = NULL, exp = NULL;
  END IF;
  RETURN NEW;
END $$;
--> statement-breakpoint
UPDATE "request_keys" SET "exp" = least("exp", "rotated_at" + interval '35 seconds') WHERE "exp" IS NOT NULL;--> statement-breakpoint
-- The nonces of signed writes are counted per key (a GCRA on the key's row: nonce_tat is the
-- theoretical arrival time), no longer in a city-wide store that one source could fill for all.
ALTER TABLE "request_keys" ADD COLUMN "nonce_tat" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "signature_nonces" DROP COLUMN "bytes";--> statement-breakpoint
DELETE FROM "city_stores" WHERE "store" = 'signature_nonces';--> statement-breakpoint
-- The identity log's city-wide bound, like every store: its rows so far are counted (2,048 bytes each).
INSERT INTO "city_stores" ("store", "total_bytes") SELECT 'identity_log', count(*) * 2048 FROM "identity_log" ON CONFLICT DO NOTHING;
--> statement-breakpoint
-- An export now closes its citizen's open step; those left open by exports before this migration close here.
UPDATE "recoveries" SET "state" = 'cancelled', "closed_at" = now()
  WHERE "state" = 'open' AND "did" IN (SELECT "did" FROM "citizens" WHERE "residency_status" = 'exported');
