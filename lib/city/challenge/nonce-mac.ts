import { exportJWK } from "jose";
import { hkdf } from "@noble/hashes/hkdf.js";
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes, randomBytes, utf8ToBytes } from "@noble/hashes/utils.js";
import type { Database } from "@/db/client";
import { LIMITS } from "@/lib/city/protocols";
import { activeSigningKey } from "@/lib/city/signing";

/*
 * A gate nonce the city checks without a row (issue 42). Its 16 bytes (32 lowercase hex, the
 * spec's format) are the issue time (6 bytes, milliseconds since 1970, big-endian), 4 random bytes
 * (two nonces of one millisecond differ) and the first 6 bytes of an HMAC-SHA256 over those 10, so
 * that only the city makes one: a forged or altered nonce would have to guess 48 bits, one
 * presentation per guess. Fresh while now < issued + 600 s; an issue time more than the clock skew
 * ahead is refused (future-dated). Single use is the spent-nonces table's (gate-nonces.ts).
 *
 * The MAC key is a subkey of its own, derived by HKDF-SHA256 from the city's Ed25519 seed (the key
 * of /.well-known/jwks.json: CITY_SIGNING_KEY, else the signing_keys row every instance shares), so
 * every instance of one city makes and accepts the same nonces, and the signing key itself never
 * MACs anything. Rotating the signing key rotates this one: nonces made under the old key (at most
 * 600 s of them) are refused from then on, as unknown ones are, and their holders GET /gate again.
 */

const TIME_BYTES = 6;
const RANDOM_BYTES = 4;
const MAC_BYTES = 6;
const SIGNED_BYTES = TIME_BYTES + RANDOM_BYTES;
/** How far the instances' clocks may disagree: an issue time this far ahead is still taken. */
export const NONCE_CLOCK_SKEW_SECONDS = 5;
const TTL_MS = LIMITS.gateNonce.ttlSeconds * 1000;
const NONCE_FORMAT = /^[0-9a-f]{32}$/;
/** HKDF's salt and info: what the subkey is for, so no other purpose can derive the same key. */
const KDF_SALT = utf8ToBytes("CITY-GATE/1");
const KDF_INFO = utf8ToBytes("gate nonce MAC, v1");

const cache = globalThis as unknown as { __cityNonceKey?: { kid: string; key: Uint8Array } };

/** The nonce MAC key of this city: derived from its signing key's seed, kept per signing key. */
export async function nonceMacKey(db: Database): Promise<Uint8Array> {
  const signing = await activeSigningKey(db);
  if (cache.__cityNonceKey?.kid === signing.kid) return cache.__cityNonceKey.key;
  const jwk = await exportJWK(signing.privateKey);
  const key = hkdf(sha256, new Uint8Array(Buffer.from(jwk.d!, "base64url")), KDF_SALT, KDF_INFO, 32);
  cache.__cityNonceKey = { kid: signing.kid, key };
  return key;
}

function macOf(key: Uint8Array, signed: Uint8Array): Uint8Array {
  return hmac(sha256, key, signed).subarray(0, MAC_BYTES);
}

/** A fresh nonce issued at `now`, and when it stops being fresh. */
export function mintNonce(key: Uint8Array, now: Date): { nonce: string; expiresAt: Date } {
  const signed = new Uint8Array(SIGNED_BYTES);
  new DataView(signed.buffer).setUint16(0, Math.floor(now.getTime() / 2 ** 32));
  new DataView(signed.buffer).setUint32(2, now.getTime() >>> 0);
  signed.set(randomBytes(RANDOM_BYTES), TIME_BYTES);
  const nonce = bytesToHex(signed) + bytesToHex(macOf(key, signed));
  return { nonce, expiresAt: new Date(now.getTime() + TTL_MS) };
}

/** A nonce this city made that is fresh at `now`: until when its spent row must be kept. Else null. */
export function checkNonce(key: Uint8Array, nonce: string, now: Date): { keptUntil: Date } | null {
  if (!NONCE_FORMAT.test(nonce)) return null;
  const bytes = hexToBytes(nonce);
  const signed = bytes.subarray(0, SIGNED_BYTES);
  if (!sameBytes(macOf(key, signed), bytes.subarray(SIGNED_BYTES))) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset);
  const issuedAt = view.getUint16(0) * 2 ** 32 + view.getUint32(2);
  if (issuedAt > now.getTime() + NONCE_CLOCK_SKEW_SECONDS * 1000) return null;
  if (now.getTime() >= issuedAt + TTL_MS) return null;
  // An instance whose clock runs behind takes it as fresh for up to the skew longer: kept till then.
  return { keptUntil: new Date(issuedAt + TTL_MS + NONCE_CLOCK_SKEW_SECONDS * 1000) };
}

/** Compares two MACs in time that does not depend on where they differ. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}
