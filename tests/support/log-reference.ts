import { createHash, createPublicKey, verify, type KeyObject } from "node:crypto";
// An implementation that is not ours: Sigstore's RFC 6962 inclusion verifier and its C2SP signed-note checkpoint verifier.
import { verifyCheckpoint } from "@sigstore/verify/dist/tlog/checkpoint";
import { verifyMerkleInclusion } from "@sigstore/verify/dist/tlog/merkle";

/** RFC 9162 MTH written straight from the definition (recursive, no stored nodes): the independent recomputation. */
export function referenceRoot(leaves: readonly Buffer[]): Buffer {
  const sha = (...parts: Buffer[]) => createHash("sha256").update(Buffer.concat(parts)).digest();
  const mth = (d: readonly Buffer[]): Buffer => {
    if (d.length === 0) return sha();
    if (d.length === 1) return sha(Buffer.from([0]), d[0]!);
    let k = 1;
    while (k * 2 < d.length) k *= 2;
    return sha(Buffer.from([1]), mth(d.slice(0, k)), mth(d.slice(k)));
  };
  return mth(leaves);
}

/** Sigstore's verifier of an inclusion proof (throws when it does not hold). */
export function sigstoreInclusion(leafData: Buffer, index: number, size: number, proof: string[], root: Buffer): void {
  verifyMerkleInclusion(
    {
      canonicalizedBody: leafData,
      inclusionProof: {
        logIndex: String(index),
        hashes: proof.map((h) => Buffer.from(h, "base64")),
        rootHash: root,
        treeSize: String(size),
        checkpoint: undefined,
      },
    } as never,
    { logSize: BigInt(size), logHash: root } as never,
  );
}

/**
 * A C2SP signed-note key ID written from the spec, with node's SHA-256 (not lib's keyIdOf): the
 * first 4 bytes of SHA-256(name || "\n" || type || public key). tests/tlog/log-note-keyid.test.ts
 * checks it against golang.org/x/mod/sumdb/note's vectors.
 */
export function referenceKeyId(name: string, type: number, publicKey: Uint8Array): Buffer {
  return createHash("sha256")
    .update(Buffer.concat([Buffer.from(`${name}\n`, "utf8"), Buffer.from([type]), Buffer.from(publicKey)]))
    .digest()
    .subarray(0, 4);
}

/**
 * Sigstore's signed-note verifier: the note's signature by `name` with the Ed25519 key `x`
 * (base64url), its key ID computed here (referenceKeyId, type 0x01). Sigstore matches a
 * signature's name as a pattern inside the log's URL, so a name that is only part of the origin
 * would pass it: this also requires the checkpoint's origin to be `name` exactly and a signature
 * line of exactly that name and key ID that verifies (node's Ed25519). Throws when any fails.
 */
export function sigstoreCheckpoint(note: string, name: string, x: string): { origin: string; logSize: bigint; logHash: Buffer } {
  const publicKey: KeyObject = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x }, format: "jwk" });
  const keyId = referenceKeyId(name, 0x01, Buffer.from(x, "base64url"));
  const checkpoint = verifyCheckpoint(
    { inclusionProof: { checkpoint: { envelope: note } } } as never,
    [{ logID: keyId, baseURL: `https://${name}`, publicKey }] as never,
  ) as never as {
    origin: string;
    logSize: bigint;
    logHash: Buffer;
  };
  if (checkpoint.origin !== name) throw new Error(`the checkpoint's origin is ${JSON.stringify(checkpoint.origin)}, not ${JSON.stringify(name)}`);
  const at = note.indexOf("\n\n");
  const body = Buffer.from(note.slice(0, at + 1), "utf8");
  const exact = note
    .slice(at + 2)
    .split("\n")
    .map((line) => /^\u2014 (\S+) ([A-Za-z0-9+/=]+)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null && m[1] === name)
    .map((m) => Buffer.from(m[2]!, "base64"))
    .filter((bytes) => bytes.length === 68 && bytes.subarray(0, 4).equals(keyId) && verify(null, body, publicKey, bytes.subarray(4)));
  if (exact.length === 0) throw new Error(`no valid signature line by exactly ${JSON.stringify(name)} with key ID ${keyId.toString("hex")}`);
  return checkpoint;
}
