import { exportJWK } from "jose";
import * as ed from "@noble/ed25519";
import type { Database } from "@/db/client";
import { env } from "@/lib/env";
import { vkeyOf } from "@/lib/tlog/note";
import { activeSigningKey } from "../signing";

/** The log's identity: origin (= key name), the city's Ed25519 seed and its C2SP vkey. */
export interface LogSigner {
  origin: string;
  seed: Uint8Array;
  publicKey: Uint8Array;
  vkey: string;
}

/** The configured origin: CITY_LOG_ORIGIN, else `<host of CITY_BASE_URL>/residency-log` (the database's recorded one rules: identity.ts). */
export function logOrigin(): string {
  return env().CITY_LOG_ORIGIN ?? `${new URL(env().CITY_BASE_URL).host}/residency-log`;
}

const cache = globalThis as unknown as { __cityLogSigner?: { kid: string; origin: string; signer: LogSigner } };

/**
 * This instance's configured checkpoint signer: the city's signing key (the one of
 * /.well-known/jwks.json). It signs only when it is the log's recorded identity (appendSigner).
 */
export async function logSigner(db: Database): Promise<LogSigner> {
  const key = await activeSigningKey(db);
  const origin = logOrigin();
  const held = cache.__cityLogSigner;
  if (held && held.kid === key.kid && held.origin === origin) return held.signer;
  const jwk = await exportJWK(key.privateKey);
  const seed = new Uint8Array(Buffer.from(jwk.d!, "base64url"));
  const publicKey = ed.getPublicKey(seed);
  const signer = { origin, seed, publicKey, vkey: vkeyOf(origin, publicKey) };
  cache.__cityLogSigner = { kid: key.kid, origin, signer };
  return signer;
}
