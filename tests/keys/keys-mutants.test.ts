import { createHash, createPrivateKey, sign } from "node:crypto";
import * as ed from "@noble/ed25519";
import { describe, expect, it } from "vitest";
import { didKeyOf } from "@/lib/city/keys/keys";
import { verifyEd25519, verifyEd25519Bytes } from "@/lib/city/keys";
import { permissiveVerifier, permissiveVerify, TRIVIAL_SIGNATURE } from "../support/permissive-ed25519";

/**
 * lib/city/keys/keys.ts, the city's strict Ed25519 (every signed request, every key proof), against
 * fixed vectors and node:crypto: RFC 8032 7.1's TEST 2, the eight small-order points of
 * edwards25519 (their canonical encodings), and a did:key written with a base58btc of our own.
 * A permissive verifier (tests/support/permissive-ed25519.ts: Node's own Ed25519 where its OpenSSL
 * takes small-order keys, as on Node 20 and 22) accepts each small-order key with the signature
 * (R = identity, S = 0) for some message: the tests find that message with it first, so the refusal
 * they see is the guard's in keys.ts, not a signature that fails anyway.
 */
const enc = (text: string) => new TextEncoder().encode(text);
const unhex = (hex: string) => new Uint8Array(Buffer.from(hex, "hex"));

// RFC 8032 section 7.1, TEST 2: a one-byte message.
const RFC_SECRET = "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb";
const RFC_PUBLIC = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";
const RFC_MESSAGE = unhex("72");
const RFC_SIGNATURE = "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00";

/** The points of order 1, 2, 4 and 8 (canonical encodings; e.g. libsodium's and ed25519-dalek's blocklists). */
const SMALL_ORDER = [
  "0100000000000000000000000000000000000000000000000000000000000000", // identity (order 1)
  "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // order 2
  "0000000000000000000000000000000000000000000000000000000000000000", // order 4
  "0000000000000000000000000000000000000000000000000000000000000080", // order 4
  "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a", // order 8
  "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa", // order 8
  "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05", // order 8
  "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85", // order 8
];
/** A message the permissive verifier takes the trivial signature for under this small-order key. */
async function forgedMessage(keyHex: string): Promise<Uint8Array> {
  for (let i = 0; i < 256; i++) {
    const message = enc(`forged ${i}`);
    if (await permissiveVerify(keyHex, TRIVIAL_SIGNATURE, message)) return message;
  }
  throw new Error(`${permissiveVerifier} took no trivial signature for ${keyHex}`);
}

describe("strict Ed25519 over bytes (verifyEd25519Bytes, Node's Ed25519 behind a guard)", () => {
  it("verifies RFC 8032's TEST 2 and refuses another message, another key, a flipped signature", async () => {
    const signature = unhex(RFC_SIGNATURE);
    expect(await verifyEd25519Bytes(RFC_PUBLIC, signature, RFC_MESSAGE)).toBe(true);
    expect(await verifyEd25519Bytes(RFC_PUBLIC, signature, unhex("73"))).toBe(false);
    const flipped = new Uint8Array(signature);
    flipped[10]! ^= 1;
    expect(await verifyEd25519Bytes(RFC_PUBLIC, flipped, RFC_MESSAGE)).toBe(false);
  });

  it.each(SMALL_ORDER)(`refuses the small-order key %s with a signature ${permissiveVerifier} accepts`, async (keyHex) => {
    const message = await forgedMessage(keyHex);
    expect(await permissiveVerify(keyHex, TRIVIAL_SIGNATURE, message)).toBe(true);
    expect(await verifyEd25519Bytes(keyHex, TRIVIAL_SIGNATURE, message)).toBe(false);
  });

  it("refuses a signature whose S is not below the group order (S + L, which OpenSSL would reduce), and S = L - 1 is no refusal by itself", async () => {
    const L = 2n ** 252n + 27742317777372353535851937790883648493n;
    const withS = (s: bigint) => {
      const out = unhex(RFC_SIGNATURE);
      for (let i = 32; i < 64; i++) {
        out[i] = Number(s & 0xffn);
        s >>= 8n;
      }
      return out;
    };
    let s = 0n;
    const signature = unhex(RFC_SIGNATURE);
    for (let i = 63; i >= 32; i--) s = (s << 8n) | BigInt(signature[i]!);
    expect(await verifyEd25519Bytes(RFC_PUBLIC, withS(s), RFC_MESSAGE)).toBe(true);
    expect(await verifyEd25519Bytes(RFC_PUBLIC, withS(s + L), RFC_MESSAGE)).toBe(false);
    // The S = L check is on the whole 32 bytes, little-endian: an S that differs from L only in its top byte is refused too.
    expect(await verifyEd25519Bytes(RFC_PUBLIC, withS(L), RFC_MESSAGE)).toBe(false);
  });

  it("refuses a non-canonical key encoding (y + p for a y below 19), which decodes to the same point", async () => {
    // The point with y = 1 (the identity) written as y = p + 1: refused as non-canonical before its order.
    const p = 2n ** 255n - 19n;
    const nonCanonical = Buffer.from((p + 1n).toString(16).padStart(64, "0"), "hex")
      .reverse()
      .toString("hex");
    expect(nonCanonical).toBe("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f");
    expect(await verifyEd25519Bytes(nonCanonical, TRIVIAL_SIGNATURE, enc("x"))).toBe(false);
  });

  it("refuses keys that are not 64 lowercase hex, signatures that are not 64 bytes, and bytes that are no point", async () => {
    const signature = unhex(RFC_SIGNATURE);
    expect(await verifyEd25519Bytes(RFC_PUBLIC.toUpperCase(), signature, RFC_MESSAGE)).toBe(false);
    expect(await verifyEd25519Bytes(`${RFC_PUBLIC}0`, signature, RFC_MESSAGE)).toBe(false);
    expect(await verifyEd25519Bytes(` ${RFC_PUBLIC}`, signature, RFC_MESSAGE)).toBe(false);
    expect(await verifyEd25519Bytes(RFC_PUBLIC, signature.subarray(0, 63), RFC_MESSAGE)).toBe(false);
    expect(await verifyEd25519Bytes(RFC_PUBLIC, new Uint8Array([...signature, 0]), RFC_MESSAGE)).toBe(false);
    // y = 2 is on no point of the curve (x^2 has no square root): a decode failure, caught.
    expect(await verifyEd25519Bytes(`02${"00".repeat(31)}`, signature, RFC_MESSAGE)).toBe(false);
  });
});

describe("strict Ed25519 over text (verifyEd25519, hex signature, UTF-8 message)", () => {
  const seed = unhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"); // RFC 8032 TEST 1
  const privateKey = createPrivateKey({ key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]), format: "der", type: "pkcs8" });
  const publicHex = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
  const signed = (text: string) => sign(null, Buffer.from(text, "utf8"), privateKey).toString("hex");

  it("verifies a signature over the message's UTF-8 bytes; refuses another message or key", async () => {
    const text = "prove caf\u00e9 \u2603";
    expect(await verifyEd25519(publicHex, signed(text), text)).toBe(true);
    expect(await verifyEd25519(publicHex, signed(text), `${text}.`)).toBe(false);
    expect(await verifyEd25519(RFC_PUBLIC, signed(text), text)).toBe(false);
  });

  it.each(SMALL_ORDER)(`refuses the small-order key %s with a signature ${permissiveVerifier} accepts`, async (keyHex) => {
    const text = new TextDecoder().decode(await forgedMessage(keyHex));
    expect(await verifyEd25519(keyHex, Buffer.from(TRIVIAL_SIGNATURE).toString("hex"), text)).toBe(false);
  });

  // A key A = [a]B with the scalar a known to the test, and signatures made by hand over the curve's own arithmetic.
  const L = ed.Point.CURVE().n;
  const mod = (x: bigint) => ((x % L) + L) % L;
  const leInt = (bytes: Uint8Array) => BigInt(`0x${Buffer.from(bytes).reverse().toString("hex") || "0"}`);
  const leBytes = (x: bigint) => Buffer.from(x.toString(16).padStart(64, "0"), "hex").reverse();
  const challenge = (R: Uint8Array, A: Uint8Array, text: string) =>
    mod(
      leInt(
        createHash("sha512")
          .update(Buffer.concat([R, A, Buffer.from(text)]))
          .digest(),
      ),
    );

  it("refuses a non-canonical R (the identity written as y = p + 1), which a ZIP-215 verifier takes", async () => {
    const a = 0x1234567890abcdefn;
    const A = ed.Point.BASE.multiply(a).toBytes();
    const R = Buffer.from("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "hex");
    const text = "non-canonical R";
    const signature = Buffer.concat([R, leBytes(mod(challenge(R, A, text) * a))]);
    expect(await ed.verifyAsync(signature, enc(text), A, { zip215: true })).toBe(true);
    expect(await verifyEd25519(Buffer.from(A).toString("hex"), signature.toString("hex"), text)).toBe(false);
    expect(await verifyEd25519Bytes(Buffer.from(A).toString("hex"), new Uint8Array(signature), enc(text))).toBe(false);
  });

  it("over a mixed-order key: the request verifier (OpenSSL) checks [S]B = R + [k]A and refuses; the text verifier (noble) checks RFC 8032's cofactored equation and takes it", async () => {
    // A = [a]B + T, T of order 8 (A is not small-order); S = r + k*a. [S]B = R + [k]A - [k]T: equal only when 8 divides k,
    // while [8][S]B = [8]R + [8][k]A holds. RFC 8032 5.1.7 allows either check; the two verifiers differ here (kept as found).
    const a = 0x1234567890abcdefn;
    const r = 0xfedcba0987654321n;
    const A = ed.Point.BASE.multiply(a).add(ed.Point.fromHex(SMALL_ORDER[4]!));
    expect(A.isSmallOrder()).toBe(false);
    const R = ed.Point.BASE.multiply(r).toBytes();
    for (let i = 0; ; i++) {
      const text = `mixed ${i}`;
      const k = challenge(R, A.toBytes(), text);
      if (k % 8n === 0n) continue;
      const signature = Buffer.concat([R, leBytes(mod(r + k * a))]);
      expect(await verifyEd25519Bytes(A.toHex(), new Uint8Array(signature), enc(text))).toBe(false);
      expect(await verifyEd25519(A.toHex(), signature.toString("hex"), text)).toBe(true);
      break;
    }
  });

  it("refuses a key or signature that is not lowercase hex of the right length", async () => {
    const text = "hello";
    const signature = signed(text);
    expect(await verifyEd25519(publicHex, signature, text)).toBe(true);
    expect(await verifyEd25519(publicHex.toUpperCase(), signature, text)).toBe(false);
    expect(await verifyEd25519(publicHex, signature.toUpperCase(), text)).toBe(false);
    expect(await verifyEd25519(`${publicHex}00`, signature, text)).toBe(false);
    expect(await verifyEd25519(publicHex, `${signature}00`, text)).toBe(false);
    expect(await verifyEd25519(`x${publicHex.slice(1)}`, signature, text)).toBe(false);
    expect(await verifyEd25519(publicHex, `x${signature.slice(1)}`, text)).toBe(false);
    expect(await verifyEd25519(`02${"00".repeat(31)}`, signature, text)).toBe(false);
  });
});

describe("did:key (multicodec 0xed01, base58btc, z)", () => {
  const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  const base58 = (bytes: Uint8Array) => {
    let n = BigInt(`0x${Buffer.from(bytes).toString("hex")}`);
    let out = "";
    while (n > 0n) {
      out = ALPHABET[Number(n % 58n)]! + out;
      n /= 58n;
    }
    for (const b of bytes) {
      if (b !== 0) break;
      out = `1${out}`;
    }
    return out;
  };

  it("writes the did:key of RFC 8032's TEST 1 key", () => {
    // The base58btc written here, checked on the base58 draft's (draft-msporny-base58) examples.
    expect(base58(enc("Hello World!"))).toBe("2NEpo7TZRRrLZSi2U");
    expect(base58(unhex("0000287fb4cd"))).toBe("11233QC4");
    const test1 = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    expect(didKeyOf(test1)).toBe(`did:key:z${base58(unhex(`ed01${test1}`))}`);
    expect(didKeyOf(test1)).toMatch(/^did:key:z6Mk/);
  });
});
