import { createPublicKey, verify as nodeVerify } from "node:crypto";
import * as ed from "@noble/ed25519";
import { base58 } from "@scure/base";
import { hexToBytes } from "@noble/hashes/utils.js";

const HEX_KEY = /^[0-9a-f]{64}$/;
const HEX_SIGNATURE = /^[0-9a-f]{128}$/;

/**
 * Strict Ed25519 verification (RFC 8032, not ZIP-215): non-canonical encodings are refused, and so
 * is a small-order public key, whose "signatures" would verify for any message. Keys and
 * signatures travel as lowercase hex; the message is signed as its UTF-8 bytes.
 */
export async function verifyEd25519(publicKeyHex: string, signatureHex: string, message: string): Promise<boolean> {
  if (!HEX_KEY.test(publicKeyHex) || !HEX_SIGNATURE.test(signatureHex)) return false;
  try {
    // Stryker disable next-line ConditionalExpression,BooleanLiteral: equivalent while noble's strict branch (zip215: false) also refuses small-order and non-canonical keys (docs/testing.md).
    if (ed.Point.fromHex(publicKeyHex, false).isSmallOrder()) return false;
    return await ed.verifyAsync(hexToBytes(signatureHex), new TextEncoder().encode(message), hexToBytes(publicKeyHex), { zip215: false });
  } catch {
    // Bytes that do not decode to a curve point verify nothing.
    return false;
  }
}

/**
 * verifyEd25519's rules over raw bytes (an RFC 9421 signature base), the signature as bytes, with
 * Node's own Ed25519 (OpenSSL, about 0.13 ms a verify where the pure-JS one takes 1.8: it runs on
 * every signed request). Strict as verifyEd25519: a small-order or non-canonical public key is
 * refused here, an S not below the group order explicitly, and OpenSSL compares R by its encoding
 * (a non-canonical R never matches).
 */
export async function verifyEd25519Bytes(publicKeyHex: string, signature: Uint8Array, message: Uint8Array): Promise<boolean> {
  // Stryker disable next-line ConditionalExpression,LogicalOperator: equivalent, a second fence: Node refuses a signature that is not 64 bytes, and the toHex comparison below any key that is not lowercase hex (docs/testing.md).
  if (!HEX_KEY.test(publicKeyHex) || signature.length !== 64) return false;
  try {
    // Stryker disable next-line BooleanLiteral: equivalent, the toHex comparison below refuses a non-canonical encoding a lax decode takes (docs/testing.md).
    const point = ed.Point.fromHex(publicKeyHex, false);
    if (point.isSmallOrder()) return false;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent while the strict decode above throws on a non-canonical key (docs/testing.md).
    if (point.toHex() !== publicKeyHex) return false;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, OpenSSL refuses S >= L itself; kept so the rule does not rest on it (docs/testing.md).
    if (littleEndian(signature.subarray(32)) >= ed.Point.CURVE().n) return false;
    const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(hexToBytes(publicKeyHex)).toString("base64url") }, format: "jwk" });
    return nodeVerify(null, message, key, signature);
  } catch {
    return false;
  }
}

// Stryker disable all: read only by the S >= L fence above, whose refusals OpenSSL makes too (docs/testing.md).
function littleEndian(bytes: Uint8Array): bigint {
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) value = (value << 8n) | BigInt(bytes[i]!);
  return value;
}
// Stryker restore all

/** The did:key of an Ed25519 public key: multicodec 0xed01, base58btc, `z` prefix (`z6Mk...`). */
export function didKeyOf(publicKeyHex: string): string {
  const bytes = new Uint8Array(34);
  bytes.set([0xed, 0x01]);
  bytes.set(hexToBytes(publicKeyHex), 2);
  return `did:key:z${base58.encode(bytes)}`;
}
