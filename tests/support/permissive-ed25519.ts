import { createPublicKey, verify } from "node:crypto";
import * as ed from "@noble/ed25519";

/*
 * A permissive Ed25519 verifier, the one the city would be without its strict guard (lib/city/keys):
 * the oracle the strict-Ed25519 tests check a forged signature against before they see the city
 * refuse it, so the refusal they see is the guard's and not a signature that fails anyway.
 * Node's own where its OpenSSL takes small-order keys (Node 20 and 22, OpenSSL 3.0: the cofactorless
 * equation, for some messages); Node 24's OpenSSL (3.5) refuses them itself, so there it is noble's
 * in ZIP 215 mode (the cofactored equation, which takes them for every message).
 */

const IDENTITY = `01${"00".repeat(31)}`;
/** R = the identity point, S = 0. */
export const TRIVIAL_SIGNATURE = new Uint8Array(64);
TRIVIAL_SIGNATURE[0] = 1;

const nodeKey = (hex: string) => createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(hex, "hex").toString("base64url") }, format: "jwk" });

/** Whether this Node's Ed25519 takes the trivial signature under the identity key (it would for every message, if at all). */
export const nodeTakesSmallOrderKeys = verify(null, new TextEncoder().encode("x"), nodeKey(IDENTITY), TRIVIAL_SIGNATURE);

/** Node's verify where it takes small-order keys, else noble's in ZIP 215 mode. */
export async function permissiveVerify(keyHex: string, signature: Uint8Array, message: Uint8Array): Promise<boolean> {
  if (nodeTakesSmallOrderKeys) return verify(null, message, nodeKey(keyHex), signature);
  return ed.verifyAsync(signature, message, Buffer.from(keyHex, "hex"), { zip215: true });
}

/** Which verifier permissiveVerify is on this Node, for a test's name or message. */
export const permissiveVerifier = nodeTakesSmallOrderKeys
  ? "Node's Ed25519"
  : "a ZIP 215 verifier (noble's; this Node's OpenSSL refuses small-order keys itself)";
