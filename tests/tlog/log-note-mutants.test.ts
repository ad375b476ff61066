import { describe, expect, it } from "vitest";
import { PETER } from "../support/go-note-vectors";
import {
  b64,
  checkpointBody,
  COSIGNATURE,
  cosign,
  cosignedMessage,
  hasValidSignature,
  keyIdOf,
  NOTE_SIGNATURE,
  parseCheckpointBody,
  parseNote,
  parseVkey,
  signatureLine,
  signCheckpoint,
  unb64,
  validCosignatures,
  vkeyOf,
} from "@/lib/tlog/note";

/**
 * C2SP signed-note, tlog-checkpoint and tlog-cosignature (lib/tlog/note.ts) against fixed
 * vectors: Go's golang.org/x/mod/sumdb/note example (PeterNeumann), and vectors signed with
 * node:crypto's Ed25519 (seed 0x07 * 32), written here as literals. Never against the code judged.
 */
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const SEED = new Uint8Array(32).fill(7);
const PUBLIC = Buffer.from("ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c", "hex");
const ORIGIN = "city.example/log";
const VKEY = "city.example/log+914b00a3+AepKbGPinFIKvvVQexMuxfmVR3auvr57kkIe6mkURtIs";
const WITNESS = "witness.example/w1";
const WITNESS_VKEY = "witness.example/w1+aa4a09d1+BOpKbGPinFIKvvVQexMuxfmVR3auvr57kkIe6mkURtIs";
const ROOT = new Uint8Array(32).fill(0xab);
const BODY = "city.example/log\n42\nq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=\n";
const NOTE = `${BODY}\n\u2014 city.example/log kUsAo0pf4WZTD+6CrozbDrAI/SP9mzCPePrPP/dsOIakSDwRNY8/FMth3kepWIf4yR1TQWGljMDOx/1IUSZdSHVD5Qw=\n`;
const COSIGNED_AT = 1700000000;
const COSIGNATURE_LINE = "\u2014 witness.example/w1 qkoJ0QAAAABlU/EAgMZlSOuuT3Gwj2Ah0NLXzWhRXv96IX7QJOiEtClLo31ol7BjEwElu3pBlRYO2ULZHJhaahSsbLc1YAjz2wQmBw==\n";

const GO_VKEY = PETER.vkey;
const GO_NOTE = `${PETER.text}\n${PETER.signature}`;

describe("keys", () => {
  it("computes key IDs as SHA-256(name, newline, type, key)[:4]", () => {
    expect(NOTE_SIGNATURE).toBe(1);
    expect(COSIGNATURE).toBe(4);
    expect(hex(keyIdOf(ORIGIN, NOTE_SIGNATURE, PUBLIC))).toBe("914b00a3");
    expect(hex(keyIdOf(WITNESS, COSIGNATURE, PUBLIC))).toBe("aa4a09d1");
    expect(hex(keyIdOf("PeterNeumann", 1, unb64("ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW").slice(1)))).toBe("c74f20a3");
  });

  it("writes vkeys, note keys by default", () => {
    expect(vkeyOf(ORIGIN, PUBLIC)).toBe(VKEY);
    expect(vkeyOf(WITNESS, PUBLIC, COSIGNATURE)).toBe(WITNESS_VKEY);
  });

  it("parses a vkey into name, type, key ID and key", () => {
    for (const [vkey, name, type, id] of [
      [VKEY, ORIGIN, 1, "914b00a3"],
      [`  ${WITNESS_VKEY}\n`, WITNESS, 4, "aa4a09d1"],
      [GO_VKEY, "PeterNeumann", 1, "c74f20a3"],
    ] as const) {
      const v = parseVkey(vkey);
      expect(v.name).toBe(name);
      expect(v.type).toBe(type);
      expect(hex(v.keyId)).toBe(id);
      expect(v.keyId).toBeInstanceOf(Uint8Array);
      expect(v.publicKey).toHaveLength(32);
    }
    expect(hex(parseVkey(VKEY).publicKey)).toBe(hex(PUBLIC));
  });

  it("refuses a malformed vkey, another key type or length, and a key ID that is not the key's", () => {
    const shape = /<name>\+<8 hex digits>\+<base64 key>/;
    for (const bad of [
      "",
      "city.example/log+914b00a3",
      "+914b00a3+AepKbGPinFIKvvVQexMuxfmVR3auvr57kkIe6mkURtIs",
      "city example+914b00a3+AepK",
      "x+914B00A3+AepKbGPinFIKvvVQexMuxfmVR3auvr57kkIe6mkURtIs",
      "x+914b00a+AepKbGPinFIKvvVQexMuxfmVR3auvr57kkIe6mkURtIs",
      "x+914b00a3+AepK bGPinFIK",
      `${VKEY} x`,
      `x y${VKEY.slice(ORIGIN.length)}`,
    ]) {
      expect(() => parseVkey(bad), bad).toThrow(shape);
    }
    const notEd = /not an Ed25519 key \(type 0x01 or 0x04, 32 bytes\)/;
    expect(() => parseVkey(`${ORIGIN}+914b00a3+${b64(Uint8Array.of(2, ...PUBLIC))}`)).toThrow(notEd);
    expect(() => parseVkey(`${ORIGIN}+914b00a3+${b64(Uint8Array.of(1, ...PUBLIC.subarray(1)))}`)).toThrow(notEd);
    expect(() => parseVkey(`${ORIGIN}+914b00a3+${b64(Uint8Array.of(1, ...PUBLIC, 0))}`)).toThrow(notEd);
    expect(() => parseVkey(`${ORIGIN}+914b00a4+AepKbGPinFIKvvVQexMuxfmVR3auvr57kkIe6mkURtIs`)).toThrow(/ID does not match its name and key/);
    expect(() => parseVkey(`city.example/lo+914b00a3+AepKbGPinFIKvvVQexMuxfmVR3auvr57kkIe6mkURtIs`)).toThrow(/ID does not match/);
    // The same key as a cosigner key has another ID.
    expect(() => parseVkey(`${ORIGIN}+914b00a3+${b64(Uint8Array.of(4, ...PUBLIC))}`)).toThrow(/ID does not match/);
  });
});

describe("checkpoints and signatures (fixed vectors)", () => {
  it("writes the checkpoint body and the signed note byte for byte", () => {
    expect(checkpointBody({ origin: ORIGIN, size: 42, root: ROOT })).toBe(BODY);
    expect(signCheckpoint({ origin: ORIGIN, size: 42, root: ROOT }, ORIGIN, SEED)).toBe(NOTE);
    expect(signatureLine("n", Uint8Array.of(1, 2, 3, 4), Uint8Array.of(5))).toBe("\u2014 n AQIDBAU=\n");
  });

  it("writes the cosigned message and the cosignature line byte for byte", () => {
    expect(new TextDecoder().decode(cosignedMessage(BODY, COSIGNED_AT))).toBe(`cosignature/v1\ntime 1700000000\n${BODY}`);
    expect(cosign(BODY, WITNESS, SEED, COSIGNED_AT)).toBe(COSIGNATURE_LINE);
  });

  it("signs with a seed's bytes as they are when it signs: one array changed in place signs with its new key", () => {
    const reused = new Uint8Array(32).fill(9);
    expect(signCheckpoint({ origin: ORIGIN, size: 42, root: ROOT }, ORIGIN, reused)).not.toBe(NOTE);
    reused.fill(7);
    expect(signCheckpoint({ origin: ORIGIN, size: 42, root: ROOT }, ORIGIN, reused)).toBe(NOTE);
    expect(cosign(BODY, WITNESS, reused, COSIGNED_AT)).toBe(COSIGNATURE_LINE);
    expect(() => signCheckpoint({ origin: ORIGIN, size: 42, root: ROOT }, ORIGIN, new Uint8Array(31))).toThrow(/32 bytes/);
  });

  it("verifies Go's signed-note example with its vkey, and ours", () => {
    expect(hasValidSignature(parseNote(GO_NOTE), parseVkey(GO_VKEY))).toBe(true);
    expect(hasValidSignature(parseNote(NOTE), parseVkey(VKEY))).toBe(true);
  });

  it("refuses a signature by another name, key ID, a changed body, or one that is not 64 bytes", () => {
    const v = parseVkey(VKEY);
    const note = parseNote(NOTE);
    const sig = note.signatures[0]!;
    expect(hasValidSignature(note, { ...v, name: "city.example/lo" })).toBe(false);
    expect(hasValidSignature(note, { ...v, name: "city.example/logs" })).toBe(false);
    expect(hasValidSignature(note, { ...v, keyId: Uint8Array.of(0x91, 0x4b, 0x00, 0xa4) })).toBe(false);
    expect(hasValidSignature(note, { ...v, keyId: Uint8Array.of(0x91, 0x4b, 0x00) })).toBe(false);
    expect(hasValidSignature({ ...note, body: BODY.replace("42", "43") }, v)).toBe(false);
    expect(hasValidSignature({ ...note, signatures: [{ ...sig, signature: sig.signature.slice(0, 63) }] }, v)).toBe(false);
    expect(hasValidSignature({ ...note, signatures: [{ ...sig, signature: Uint8Array.of(...sig.signature, 0) }] }, v)).toBe(false);
    expect(hasValidSignature({ ...note, signatures: [] }, v)).toBe(false);
    // A signature that is not a point at all is refused, not thrown.
    expect(hasValidSignature({ ...note, signatures: [{ ...sig, signature: new Uint8Array(64).fill(0xff) }] }, v)).toBe(false);
    // A verifier's key ID one byte longer than the line's, with the same first four bytes.
    expect(hasValidSignature(note, { ...v, keyId: Uint8Array.of(...v.keyId, 0) })).toBe(false);
    // A key of the wrong length is refused, not thrown.
    expect(hasValidSignature(note, { ...v, publicKey: v.publicKey.slice(1) })).toBe(false);
    // One valid line among others is enough (unknown lines are ignored).
    const other = { ...sig, name: "someone.else" };
    expect(hasValidSignature({ ...note, signatures: [other, sig] }, v)).toBe(true);
  });

  it("verifies strictly (RFC 8032), not by ZIP-215: a small-order key with the identity signature is refused", () => {
    // A = the identity point (y = 1), R = the identity, S = 0: [8]SB = [8]R + [8]kA holds for any
    // message, so a cofactored (ZIP-215) verifier accepts it; RFC 8032 strict verification does not.
    const identity = new Uint8Array(32);
    identity[0] = 1;
    const signature = new Uint8Array(64);
    signature[0] = 1;
    const keyId = Uint8Array.of(1, 2, 3, 4);
    const verifier = { name: "small", type: NOTE_SIGNATURE, keyId, publicKey: identity };
    expect(hasValidSignature({ body: "anything\n", signatures: [{ name: "small", keyId, signature, line: "" }] }, verifier)).toBe(false);
    const cosig = Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 1, ...signature);
    expect(
      validCosignatures({ body: "anything\n", signatures: [{ name: "small", keyId, signature: cosig, line: "" }] }, { ...verifier, type: COSIGNATURE }),
    ).toEqual([]);
  });

  it("reads the valid cosignatures of a witness with their timestamps", () => {
    const w = parseVkey(WITNESS_VKEY);
    const note = parseNote(`${NOTE}${COSIGNATURE_LINE}`);
    expect(validCosignatures(note, w)).toEqual([{ line: COSIGNATURE_LINE, timestamp: COSIGNED_AT }]);
    const cos = note.signatures[1]!;
    expect(validCosignatures(note, { ...w, name: "witness.example/w2" })).toEqual([]);
    expect(validCosignatures(note, { ...w, keyId: Uint8Array.of(0xaa, 0x4a, 0x09, 0xd2) })).toEqual([]);
    expect(validCosignatures({ ...note, signatures: [{ ...cos, signature: cos.signature.slice(0, 71) }] }, w)).toEqual([]);
    // Too short to hold a timestamp: refused, not thrown.
    expect(validCosignatures({ ...note, signatures: [{ ...cos, signature: cos.signature.slice(0, 7) }] }, w)).toEqual([]);
    expect(validCosignatures({ ...note, body: BODY.replace("42", "43") }, w)).toEqual([]);
    // Another timestamp than the one signed.
    const later = Uint8Array.from(cos.signature);
    later[7] = later[7]! + 1;
    expect(validCosignatures({ ...note, signatures: [{ ...cos, signature: later }] }, w)).toEqual([]);
    // The signature bytes from an offset into a larger buffer (as parseNote's slices may be).
    const padded = new Uint8Array(80);
    padded.set(cos.signature, 8);
    expect(validCosignatures({ ...note, signatures: [{ ...cos, signature: padded.subarray(8) }] }, w)).toEqual([
      { line: COSIGNATURE_LINE, timestamp: COSIGNED_AT },
    ]);
  });
});

describe("parsing", () => {
  it("splits a note into its body and signature lines", () => {
    const note = parseNote(`${NOTE}${COSIGNATURE_LINE}`);
    expect(note.body).toBe(BODY);
    expect(note.signatures.map((s) => [s.name, hex(s.keyId), s.signature.length, s.line])).toEqual([
      [ORIGIN, "914b00a3", 64, NOTE.slice(BODY.length + 1)],
      [WITNESS, "aa4a09d1", 72, COSIGNATURE_LINE],
    ]);
  });

  it("refuses a note without a blank line, a final newline, or with a malformed signature line", () => {
    expect(() => parseNote(BODY)).toThrow(/blank line between its text and its signatures/);
    expect(() => parseNote(NOTE.slice(0, -1))).toThrow(/ends with a newline/);
    expect(() => parseNote(`${BODY}\n- ${ORIGIN} AAAAAAAA\n`)).toThrow(/a signature line is '\u2014 <name> <base64>'/);
    expect(() => parseNote(`${BODY}\nx\u2014 ${ORIGIN} AAAAAAAA\n`)).toThrow(/a signature line/);
    expect(() => parseNote(`${BODY}\n\u2014 ${ORIGIN} AAAAAAAA!\n`)).toThrow(/a signature line/);
    expect(() => parseNote(`${BODY}\n\u2014 ${ORIGIN} AAAAAA==\n`)).toThrow(/a key ID and a signature/);
    expect(parseNote(`${BODY}\n\u2014 ${ORIGIN} AAAAAAA=\n`).signatures[0]!.signature).toHaveLength(1);
    expect(parseNote(`${BODY}\n\u2014 ${ORIGIN} AAAAAAAA\n`).signatures[0]!.signature).toHaveLength(2);
    expect(parseNote(`${BODY}\n`).signatures).toEqual([]);
    // An empty text: the blank line at the very start.
    expect(parseNote("\n\n")).toEqual({ body: "\n", signatures: [] });
  });

  it("parses a checkpoint body with its extension lines", () => {
    const parsed = parseCheckpointBody(`${BODY}ext one\next two\n`);
    expect(parsed.origin).toBe(ORIGIN);
    expect(parsed.size).toBe(42);
    expect(hex(parsed.root)).toBe("ab".repeat(32));
    expect(parsed.extensions).toEqual(["ext one", "ext two"]);
    expect(parseCheckpointBody(BODY).extensions).toEqual([]);
    expect(parseCheckpointBody(BODY.replace("42", "0")).size).toBe(0);
  });

  it("refuses a checkpoint without an origin, a decimal size or a 32-byte canonical base64 root", () => {
    const shape = /an origin, a decimal size and a base64 root hash, one per line/;
    const root = b64(ROOT);
    for (const bad of [
      `\n42\n${root}\n`,
      `${ORIGIN}\n\n${root}\n`,
      `${ORIGIN}\n042\n${root}\n`,
      `${ORIGIN}\n4x2\n${root}\n`,
      `${ORIGIN}\n-1\n${root}\n`,
      `${ORIGIN}\n42\n`,
      `${ORIGIN}\nx42\n${root}\n`,
      `${ORIGIN}\n42x\n${root}\n`,
    ]) {
      expect(() => parseCheckpointBody(bad), JSON.stringify(bad)).toThrow(shape);
    }
    const notRoot = /root hash is not 32 bytes of base64/;
    expect(() => parseCheckpointBody(`${ORIGIN}\n42\n${b64(ROOT.slice(1))}\n`)).toThrow(notRoot);
    expect(() => parseCheckpointBody(`${ORIGIN}\n42\n${b64(Uint8Array.of(...ROOT, 1))}\n`)).toThrow(notRoot);
    // Base64 that decodes to 32 bytes but is not written canonically.
    expect(() => parseCheckpointBody(`${ORIGIN}\n42\n${root.slice(0, -2)}t=\n`)).toThrow(notRoot);
    expect(() => parseCheckpointBody(`${ORIGIN}\n42\n${root.replace("=", "")}\n`)).toThrow(notRoot);
  });

  it("base64 both ways", () => {
    expect(b64(Uint8Array.of(0xfb, 0xff))).toBe("+/8=");
    expect(hex(unb64("+/8="))).toBe("fbff");
    expect(unb64("+/8=")).toBeInstanceOf(Uint8Array);
  });
});
