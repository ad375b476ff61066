import { exportJWK } from "jose";
import * as ed from "@noble/ed25519";
import type { Database } from "@/db/client";
import { env } from "@/lib/env";
import { vkeyOf } from "@/lib/tlog/note";
import { activeSigningKey } from "@/lib/city/signing";
import type { LogDescriptor } from "./descriptor";

/** A log's identity: origin (= key name), the city's Ed25519 seed and its C2SP vkey. */
export interface LogSigner {
  origin: string;
  seed: Uint8Array;
  publicKey: Uint8Array;
  vkey: string;
}

/** The origin a log takes by default: `<host of CITY_BASE_URL>/<name>` (residency-log, identity-log). */
export function originAtBaseHost(name: string): string {
  return `${new URL(env().CITY_BASE_URL).host}/${name}`;
}

const cache = globalThis as unknown as { __cityLogSigners?: Map<string, { kid: string; signer: LogSigner }> };

/**
 * This instance's configured checkpoint signer for a log: the city's signing key (the one of
 * /.well-known/jwks.json) under the log's origin. It signs only when it is the log's recorded
 * identity (appendSigner). Both logs share the key; each has its own origin.
 */
export async function logSigner(log: LogDescriptor, db: Database): Promise<LogSigner> {
  const key = await activeSigningKey(db);
  const origin = log.origin();
  const signers = (cache.__cityLogSigners ??= new Map());
  const held = signers.get(origin);
  if (held && held.kid === key.kid) return held.signer;
  const jwk = await exportJWK(key.privateKey);
  const seed = new Uint8Array(Buffer.from(jwk.d!, "base64url"));
  const publicKey = ed.getPublicKey(seed);
  const signer = { origin, seed, publicKey, vkey: vkeyOf(origin, publicKey) };
  signers.set(origin, { kid: key.kid, signer });
  return signer;
}
