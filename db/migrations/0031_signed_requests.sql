-- Signed requests (CITY-SIG/1, issue 32): the keys a citizen's requests may be signed with, and the
-- single-use nonces of signed writes.
CREATE TABLE "request_keys" (
	"did" text NOT NULL,
	"thumbprint" text NOT NULL,
	"public_key" text NOT NULL,
	"nbf" timestamp with time zone NOT NULL,
	"rotated_at" timestamp with time zone,
	"exp" timestamp with time zone,
	CONSTRAINT "request_keys_did_thumbprint_pk" PRIMARY KEY("did","thumbprint")
);
--> statement-breakpoint
CREATE TABLE "signature_nonces" (
	"keyid" text NOT NULL,
	"nonce" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"bytes" integer NOT NULL,
	CONSTRAINT "signature_nonces_keyid_nonce_pk" PRIMARY KEY("keyid","nonce")
);
--> statement-breakpoint
CREATE INDEX "request_keys_thumbprint" ON "request_keys" USING btree ("thumbprint");--> statement-breakpoint
CREATE INDEX "signature_nonces_expires_at" ON "signature_nonces" USING btree ("expires_at");--> statement-breakpoint
-- The RFC 7638 thumbprint of an Ed25519 key given as 64 hex: base64url(SHA-256 of the UTF-8 of
-- {"crv":"Ed25519","kty":"OKP","x":"<base64url of the 32 bytes>"}), without padding. The same
-- function as jwkThumbprint in lib/city/request-keys.ts (a test compares them).
CREATE FUNCTION city_key_thumbprint(hex text) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT rtrim(translate(encode(sha256(convert_to(
    '{"crv":"Ed25519","kty":"OKP","x":"' || rtrim(translate(encode(decode(hex, 'hex'), 'base64'), '+/', '-_'), '=') || '"}', 'UTF8')), 'base64'), '+/', '-_'), '=')
$$;
--> statement-breakpoint
-- Every change of a citizen's controller key is followed here, whatever path made it (first
-- admission, a bind at the gate, a rotation, a recovery): the new key becomes the current request
-- key (nbf now), the old one gets rotated_at now and exp 305 s later (a signature lives at most
-- 300 s and may be created 5 s ahead of the city's clock), and the citizen's keys past their exp go.
CREATE FUNCTION city_follow_request_keys() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF NEW.controller_public_key IS NOT DISTINCT FROM OLD.controller_public_key THEN
      RETURN NEW;
    END IF;
    DELETE FROM request_keys WHERE did = NEW.did AND exp IS NOT NULL AND exp < now();
    UPDATE request_keys SET rotated_at = now(), exp = now() + interval '305 seconds'
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
CREATE TRIGGER citizens_request_keys AFTER INSERT OR UPDATE OF controller_public_key ON citizens
  FOR EACH ROW EXECUTE FUNCTION city_follow_request_keys();
--> statement-breakpoint
-- The keys bound before this migration: current since their citizen's admission (the moment the
-- key was bound is not kept elsewhere).
INSERT INTO request_keys (did, thumbprint, public_key, nbf)
  SELECT did, city_key_thumbprint(controller_public_key), controller_public_key, bound_at FROM citizens
  WHERE controller_public_key IS NOT NULL AND residency_status <> 'exported'
  ON CONFLICT DO NOTHING;
--> statement-breakpoint
-- The nonce store's city-wide bound starts empty.
INSERT INTO "city_stores" ("store", "total_bytes") VALUES ('signature_nonces', 0) ON CONFLICT DO NOTHING;
