import { createPublicKey, type KeyObject, sign as nodeSign } from "node:crypto";
import * as ed from "@noble/ed25519";
import { sha256, sha512 } from "@noble/hashes/sha2.js";
import { privateKeyOfSeed } from "../ed25519-seed";

ed.hashes.sha512 ??= sha512;

/**
 * C2SP signed-note, tlog-checkpoint and tlog-cosignature (Ed25519) as pure functions, shared by
 * the city, its verifier and the reference witness. Key IDs: SHA-256(name || "\n" || type || key)[:4],
 * type 0x01 for a note signature, 0x04 for a cosignature.
 */
export const NOTE_SIGNATURE = 0x01;
export const COSIGNATURE = 0x04;
const DASH = "\u2014";
const utf8 = new TextEncoder();

export interface Checkpoint {
  origin: string;
  size: number;
  root: Uint8Array;
}

export interface NoteSignature {
  name: string;
  keyId: Uint8Array;
  signature: Uint8Array;
  line: string;
}

export const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64");
export const unb64 = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, "base64"));

export function keyIdOf(name: string, type: number, publicKey: Uint8Array): Uint8Array {
  const input = new Uint8Array([...utf8.encode(`${name}\n`), type, ...publicKey]);
  return sha256(input).slice(0, 4);
}

/** The C2SP vkey: `<name>+<key id hex>+<base64(type || public key)>`. */
export function vkeyOf(name: string, publicKey: Uint8Array, type = NOTE_SIGNATURE): string {
  return `${name}+${Buffer.from(keyIdOf(name, type, publicKey)).toString("hex")}+${b64(new Uint8Array([type, ...publicKey]))}`;
}

export interface Verifier {
  name: string;
  type: number;
  keyId: Uint8Array;
  publicKey: Uint8Array;
}

/** Parses a vkey and checks that its key ID is the one its name and key give. */
export function parseVkey(vkey: string): Verifier {
  // The base64 key may itself hold "+": the name ends at the first "+", the key ID is the next 8 hex digits.
  const match = /^([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/]+=*)$/.exec(vkey.trim());
  if (!match) throw new Error("a verifier key is <name>+<8 hex digits>+<base64 key>");
  const [, name, idHex, key] = match as unknown as [string, string, string, string];
  const bytes = unb64(key);
  if (bytes.length !== 33 || (bytes[0] !== NOTE_SIGNATURE && bytes[0] !== COSIGNATURE))
    throw new Error("the verifier key is not an Ed25519 key (type 0x01 or 0x04, 32 bytes)");
  const verifier = { name, type: bytes[0]!, publicKey: bytes.slice(1), keyId: Buffer.from(idHex, "hex") };
  if (Buffer.compare(Buffer.from(keyIdOf(name, verifier.type, verifier.publicKey)), Buffer.from(verifier.keyId)) !== 0)
    throw new Error("the verifier key's ID does not match its name and key");
  return { ...verifier, keyId: new Uint8Array(verifier.keyId) };
}

export function checkpointBody(checkpoint: Checkpoint): string {
  return `${checkpoint.origin}\n${checkpoint.size}\n${b64(checkpoint.root)}\n`;
}

export function signatureLine(name: string, keyId: Uint8Array, signature: Uint8Array): string {
  return `${DASH} ${name} ${b64(new Uint8Array([...keyId, ...signature]))}\n`;
}

/** An Ed25519 seed as Node's key (OpenSSL) and its public key, made once per seed array. */
interface SeedKey {
  privateKey: KeyObject;
  publicKey: Uint8Array;
}
const seedKeys = new WeakMap<Uint8Array, { bytes: string; key: SeedKey }>();

function seedKey(seed: Uint8Array): SeedKey {
  if (seed.length !== 32) throw new Error("an Ed25519 seed is 32 bytes");
  // Keyed by the array, checked by its bytes (an array changed in place is a new key).
  const bytes = Buffer.from(seed).toString("hex");
  const held = seedKeys.get(seed);
  if (held && held.bytes === bytes) return held.key;
  const privateKey = privateKeyOfSeed(seed);
  const x = createPublicKey(privateKey).export({ format: "jwk" }).x!;
  const key = { privateKey, publicKey: new Uint8Array(Buffer.from(x, "base64url")) };
  seedKeys.set(seed, { bytes, key });
  return key;
}

/**
 * An Ed25519 signature (RFC 8032: deterministic, the same bytes whoever computes it) by Node's
 * OpenSSL: about 0.08 ms where the pure-JS one, with the public key derived again, took 1.3 ms,
 * paid by every batch of a log's integration (one checkpoint each). The note vectors of
 * tests/tlog/tlog-vectors.test.ts are signed again byte for byte.
 */
function signWithSeed(message: Uint8Array, seed: Uint8Array): { signature: Uint8Array; publicKey: Uint8Array } {
  const key = seedKey(seed);
  return { signature: new Uint8Array(nodeSign(null, message, key.privateKey)), publicKey: key.publicKey };
}

/** Signs a checkpoint as a signed note with an Ed25519 seed (32 bytes). */
export function signCheckpoint(checkpoint: Checkpoint, name: string, seed: Uint8Array): string {
  const body = checkpointBody(checkpoint);
  const { signature, publicKey } = signWithSeed(utf8.encode(body), seed);
  return `${body}\n${signatureLine(name, keyIdOf(name, NOTE_SIGNATURE, publicKey), signature)}`;
}

/** The message a tlog-cosignature/v1 signs. */
export function cosignedMessage(body: string, timestamp: number): Uint8Array {
  return utf8.encode(`cosignature/v1\ntime ${timestamp}\n${body}`);
}

/** A witness's cosignature line over a checkpoint body. */
export function cosign(body: string, name: string, seed: Uint8Array, timestamp: number): string {
  const time = new Uint8Array(8);
  new DataView(time.buffer).setBigUint64(0, BigInt(timestamp));
  const { signature, publicKey } = signWithSeed(cosignedMessage(body, timestamp), seed);
  return signatureLine(name, keyIdOf(name, COSIGNATURE, publicKey), new Uint8Array([...time, ...signature]));
}

/** Splits a signed note into its body (with its final newline) and its signature lines. */
export function parseNote(text: string): { body: string; signatures: NoteSignature[] } {
  if ([...text].some((c) => c < " " && c !== "\n")) throw new Error("a signed note holds no control character but the newline");
  // The text may hold blank lines of its own: it ends at the last one (C2SP signed-note).
  const at = text.lastIndexOf("\n\n");
  if (at < 0) throw new Error("a signed note has a blank line between its text and its signatures");
  const body = text.slice(0, at + 1);
  const lines = text.slice(at + 2).split("\n");
  if (lines.pop() !== "") throw new Error("a signed note ends with a newline");
  const signatures = lines.map((line) => {
    const match = /^\u2014 (\S+) ([A-Za-z0-9+/=]+)$/.exec(line);
    if (!match) throw new Error("a signature line is '\u2014 <name> <base64>'");
    const bytes = unb64(match[2]!);
    if (bytes.length < 5) throw new Error("a signature is a key ID and a signature");
    return { name: match[1]!, keyId: bytes.slice(0, 4), signature: bytes.slice(4), line: `${line}\n` };
  });
  return { body, signatures };
}

export function parseCheckpointBody(body: string): Checkpoint & { extensions: string[] } {
  const lines = body.split("\n");
  lines.pop();
  const [origin, size, root, ...extensions] = lines;
  if (!origin || !size || !/^(0|[1-9][0-9]*)$/.test(size) || root === undefined)
    throw new Error("a checkpoint is an origin, a decimal size and a base64 root hash, one per line");
  if (extensions.includes("")) throw new Error("a checkpoint's extension lines are not empty");
  const hash = unb64(root);
  if (hash.length !== 32 || b64(hash) !== root) throw new Error("the checkpoint's root hash is not 32 bytes of base64");
  return { origin, size: Number(size), root: hash, extensions };
}

const sameId = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/** Does the note carry a valid signature by this note key? (Other lines are ignored, as the spec says.) */
export function hasValidSignature(note: { body: string; signatures: NoteSignature[] }, verifier: Verifier): boolean {
  return note.signatures.some(
    (s) =>
      s.name === verifier.name &&
      sameId(s.keyId, verifier.keyId) &&
      s.signature.length === 64 &&
      safeVerify(s.signature, utf8.encode(note.body), verifier.publicKey),
  );
}

/** The valid cosignatures by this witness key, with their timestamps. */
export function validCosignatures(note: { body: string; signatures: NoteSignature[] }, witness: Verifier): Array<{ line: string; timestamp: number }> {
  return note.signatures.flatMap((s) => {
    if (s.name !== witness.name || !sameId(s.keyId, witness.keyId) || s.signature.length !== 72) return [];
    const timestamp = Number(new DataView(s.signature.buffer, s.signature.byteOffset, 8).getBigUint64(0));
    return safeVerify(s.signature.slice(8), cosignedMessage(note.body, timestamp), witness.publicKey) ? [{ line: s.line, timestamp }] : [];
  });
}

function safeVerify(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    return ed.verify(signature, message, publicKey, { zip215: false });
  } catch {
    return false;
  }
}
