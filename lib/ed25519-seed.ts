import { createPrivateKey, type KeyObject } from "node:crypto";

/** PKCS#8 DER of an Ed25519 private key, up to its 32-byte seed (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

/** An Ed25519 seed (32 bytes) as Node's private key. */
export function privateKeyOfSeed(seed: Uint8Array): KeyObject {
  if (seed.length !== 32) throw new Error("an Ed25519 seed is 32 bytes");
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: "der", type: "pkcs8" });
}
