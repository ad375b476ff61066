import { describe, expect, it } from "vitest";
import { permissiveVerifier, permissiveVerify, TRIVIAL_SIGNATURE } from "../support/permissive-ed25519";
import { importSeed, jwkThumbprint, signatureBase, signatureParams, signBase } from "@/lib/sign-request";

/*
 * The signing helper agents copy (lib/sign-request.ts) builds the RFC 9421 signature base by hand,
 * apart from the library the city verifies with, so the two cannot share a mistake. Here it is held
 * to the RFC's own example: Appendix B.2.6 (a request signed with Ed25519), key B.1.4.
 */

// RFC 9421 B.1.4, test-key-ed25519 (as a JWK: its d and x).
const RFC_SEED = Buffer.from("n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU", "base64url");
const RFC_PUBLIC = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs";

// RFC 9421 B.2.6: the signature base (its line wrapping per RFC 8792 undone) and the signature.
const RFC_BASE = [
  '"date": Tue, 20 Apr 2021 02:07:55 GMT',
  '"@method": POST',
  '"@path": /foo',
  '"@authority": example.com',
  '"content-type": application/json',
  '"content-length": 18',
  '"@signature-params": ("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"',
].join("\n");
const RFC_SIGNATURE = "wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==";

describe("the signing helper against RFC 9421's own example", () => {
  it("builds B.2.6's signature base and signs it to B.2.6's signature with B.1.4's key", async () => {
    const components: [string, string][] = [
      ["date", "Tue, 20 Apr 2021 02:07:55 GMT"],
      ["@method", "POST"],
      ["@path", "/foo"],
      ["@authority", "example.com"],
      ["content-type", "application/json"],
      ["content-length", "18"],
    ];
    const params = signatureParams(
      components.map(([name]) => name),
      [
        ["created", 1618884473],
        ["keyid", "test-key-ed25519"],
      ],
    );
    const base = signatureBase(components, params);
    expect(base).toBe(RFC_BASE);
    const key = await importSeed(new Uint8Array(RFC_SEED));
    expect(Buffer.from(key.publicKey).toString("base64url")).toBe(RFC_PUBLIC);
    expect(Buffer.from(await signBase(key.privateKey, base)).toString("base64")).toBe(RFC_SIGNATURE);
  });

  it("computes RFC 7638's thumbprint of an Ed25519 key (RFC 8037 appendix A.3's example)", async () => {
    // RFC 8037 A.3: the thumbprint of its example key x = 11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo.
    const x = Buffer.from("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "base64url");
    expect(await jwkThumbprint(new Uint8Array(x))).toBe("kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
  });
});

describe("the city's verify of a signature base (verifyEd25519Bytes)", () => {
  it("verifies RFC 9421 B.2.6 and refuses what strict Ed25519 refuses: a non-canonical S, a small-order key, another message", async () => {
    const { verifyEd25519Bytes } = await import("@/lib/city/keys");
    const publicHex = Buffer.from(RFC_PUBLIC, "base64url").toString("hex");
    const signature = new Uint8Array(Buffer.from(RFC_SIGNATURE, "base64"));
    const base = new TextEncoder().encode(RFC_BASE);
    expect(await verifyEd25519Bytes(publicHex, signature, base)).toBe(true);
    expect(await verifyEd25519Bytes(publicHex, signature, new TextEncoder().encode(`${RFC_BASE} `))).toBe(false);
    // S + L: the same signature to a lax verifier, refused by a strict one.
    const L = 2n ** 252n + 27742317777372353535851937790883648493n;
    let s = 0n;
    for (let i = 63; i >= 32; i--) s = (s << 8n) | BigInt(signature[i]!);
    const bumped = new Uint8Array(signature);
    let v = s + L;
    for (let i = 32; i < 64; i++) {
      bumped[i] = Number(v & 0xffn);
      v >>= 8n;
    }
    expect(await verifyEd25519Bytes(publicHex, bumped, base)).toBe(false);
    // The identity point (a small-order key) with R = identity, S = 0: a permissive verifier (Node's
    // own Ed25519 on Node 20 and 22) takes that signature for any message (seen here first), so only
    // keys.ts's small-order guard refuses it.
    const identity = "01".padEnd(64, "0");
    expect(await permissiveVerify(identity, TRIVIAL_SIGNATURE, base), permissiveVerifier).toBe(true);
    expect(await verifyEd25519Bytes(identity, TRIVIAL_SIGNATURE, base)).toBe(false);
    // A key that is not lowercase hex.
    expect(await verifyEd25519Bytes(publicHex.toUpperCase(), signature, base)).toBe(false);
  });
});
