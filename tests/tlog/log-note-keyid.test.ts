import * as ed from "@noble/ed25519";
import { describe, expect, it } from "vitest";
import { ENOCH, PETER } from "../support/go-note-vectors";
import { COSIGNATURE, hasValidSignature, keyIdOf, NOTE_SIGNATURE, parseNote, parseVkey, signatureLine, signCheckpoint, vkeyOf } from "@/lib/tlog/note";
import { referenceKeyId, sigstoreCheckpoint } from "../support/log-reference";

/*
 * Key IDs of C2SP signed notes against vectors that are not ours: the keys and the signed note of
 * golang.org/x/mod/sumdb/note's own tests (note_test.go, the reference implementation the C2SP
 * signed-note spec was written from), pinned here byte for byte. Nothing here computes an expected
 * value with keyIdOf: the vectors are literals, and the test's own key ID (referenceKeyId, node's
 * SHA-256 over name || "\n" || type || key) is checked against them first.
 */

const keyOf = (vkey: string) => new Uint8Array(Buffer.from(vkey.split("+")[2]!, "base64")).slice(1);
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const seedOf = (skey: string) => new Uint8Array(Buffer.from(skey.split("+").slice(4).join("+"), "base64")).slice(1);

describe("signed-note key IDs against golang.org/x/mod/sumdb/note's vectors", () => {
  it("the test's own key ID gives the vectors' IDs (so it can stand as an oracle elsewhere)", () => {
    expect(hex(referenceKeyId(PETER.name, NOTE_SIGNATURE, keyOf(PETER.vkey)))).toBe(PETER.keyId);
    expect(hex(referenceKeyId(ENOCH.name, NOTE_SIGNATURE, keyOf(ENOCH.vkey)))).toBe(ENOCH.keyId);
  });

  it("keyIdOf and vkeyOf give the vectors' IDs and keys", () => {
    for (const { name, keyId, vkey } of [PETER, ENOCH]) {
      expect(hex(keyIdOf(name, NOTE_SIGNATURE, keyOf(vkey))), name).toBe(keyId);
      expect(vkeyOf(name, keyOf(vkey)), name).toBe(vkey);
    }
    // The signer key's seed is the verifier key's private half.
    expect(Buffer.from(ed.getPublicKey(seedOf(PETER.skey))).toString("base64")).toBe(Buffer.from(keyOf(PETER.vkey)).toString("base64"));
  });

  it("parseVkey takes the vectors' keys and refuses one whose ID or name was changed", () => {
    const peter = parseVkey(PETER.vkey);
    expect({ name: peter.name, type: peter.type, keyId: hex(peter.keyId) }).toEqual({ name: "PeterNeumann", type: NOTE_SIGNATURE, keyId: "c74f20a3" });
    expect(() => parseVkey("PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")).toThrow();
    expect(() => parseVkey("PeterNeuman+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")).toThrow();
    // The Go tests' key of an unknown algorithm (0x65), with its key ID adjusted: still refused.
    expect(() => parseVkey("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")).toThrow();
  });

  it("signs the vector's text into the vector's note, byte for byte", () => {
    const seed = seedOf(PETER.skey);
    const line = signatureLine(PETER.name, keyIdOf(PETER.name, NOTE_SIGNATURE, ed.getPublicKey(seed)), ed.sign(new TextEncoder().encode(PETER.text), seed));
    expect(`${PETER.text}\n${line}`).toBe(`${PETER.text}\n${PETER.signature}`);
  });

  it("verifies the vector's note only under the exact name and key", () => {
    const note = parseNote(`${PETER.text}\n${PETER.signature}${ENOCH.signature}`);
    expect(note.signatures.map((s) => [s.name, hex(s.keyId)])).toEqual([
      ["PeterNeumann", "c74f20a3"],
      ["EnochRoot", "af0cfe78"],
    ]);
    const peter = parseVkey(PETER.vkey);
    const enoch = parseVkey(ENOCH.vkey);
    expect(hasValidSignature(note, peter)).toBe(true);
    expect(hasValidSignature(note, enoch)).toBe(true);
    // A name that only contains, or is contained in, the signer's: not its signature.
    expect(hasValidSignature(note, { ...peter, name: "PeterNeuman" })).toBe(false);
    expect(hasValidSignature(note, { ...peter, name: "PeterNeumann.example" })).toBe(false);
    // The signature moved under another name: refused (Go's "misnamed" case).
    expect(hasValidSignature(parseNote(`${PETER.text}\n${PETER.signature.replace("PeterNeumann", "CarmenSandiego")}`), peter)).toBe(false);
    // One character of the signature changed (Go's "invalid signature" case).
    const broken = `${PETER.signature.slice(0, 60)}ABCD${PETER.signature.slice(60)}`;
    expect(hasValidSignature(parseNote(`${PETER.text}\n${broken}`), peter)).toBe(false);
  });

  it("a cosigner's key ID is over type 0x04, not 0x01 (the same name and key give another ID)", () => {
    const key = keyOf(PETER.vkey);
    expect(hex(keyIdOf(PETER.name, COSIGNATURE, key))).toBe(hex(referenceKeyId(PETER.name, COSIGNATURE, key)));
    expect(hex(keyIdOf(PETER.name, COSIGNATURE, key))).not.toBe(PETER.keyId);
  });

  it("the Sigstore oracle of the log suites takes a checkpoint only under its exact origin as the key's name", () => {
    const seed = new Uint8Array(32).fill(3);
    const x = Buffer.from(ed.getPublicKey(seed)).toString("base64url");
    const checkpoint = { origin: "city.example/residency-log", size: 1, root: new Uint8Array(32).fill(9) };
    expect(sigstoreCheckpoint(signCheckpoint(checkpoint, checkpoint.origin, seed), checkpoint.origin, x).origin).toBe(checkpoint.origin);
    // Signed under a name that is only part of the origin (Sigstore alone matches it inside the URL).
    expect(() => sigstoreCheckpoint(signCheckpoint(checkpoint, "city.example", seed), "city.example", x)).toThrow(/origin/);
    expect(() => sigstoreCheckpoint(signCheckpoint(checkpoint, "city.example", seed), checkpoint.origin, x)).toThrow();
    // Another log's checkpoint under this log's name.
    expect(() => sigstoreCheckpoint(signCheckpoint({ ...checkpoint, origin: "other.example/log" }, checkpoint.origin, seed), checkpoint.origin, x)).toThrow(
      /origin/,
    );
  });
});
