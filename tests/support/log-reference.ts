import { createHash, createPublicKey, type KeyObject } from "node:crypto";
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
    { canonicalizedBody: leafData, inclusionProof: { logIndex: String(index), hashes: proof.map((h) => Buffer.from(h, "base64")), rootHash: root, treeSize: String(size), checkpoint: undefined } } as never,
    { logSize: BigInt(size), logHash: root } as never,
  );
}

/** Sigstore's signed-note verifier: the note's signature by `name` with the Ed25519 key `x` (base64url) and key ID. */
export function sigstoreCheckpoint(note: string, name: string, x: string, keyId: Buffer): { origin: string; logSize: bigint; logHash: Buffer } {
  const publicKey: KeyObject = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x }, format: "jwk" });
  return verifyCheckpoint({ inclusionProof: { checkpoint: { envelope: note } } } as never, [{ logID: keyId, baseURL: `https://${name}`, publicKey }] as never) as never;
}
