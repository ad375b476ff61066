import { createHash, createPrivateKey, createPublicKey, sign } from "node:crypto";

/**
 * Independent references for the mutation tests of the log (tests/unit/log-*-mutants.test.ts):
 * RFC 9162's recursive definitions of MTH, PATH and PROOF, and C2SP note signing, written with
 * node:crypto alone. Nothing here imports lib/: the code judged is never its own oracle.
 */
export const sha = (...parts: Uint8Array[]) => new Uint8Array(createHash("sha256").update(Buffer.concat(parts)).digest());
export const refLeaf = (d: Uint8Array) => sha(Uint8Array.of(0), d);
export const refNode = (a: Uint8Array, b: Uint8Array) => sha(Uint8Array.of(1), a, b);
/** The largest power of two smaller than n (n > 1). */
export const refSplit = (n: number) => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};
export const mth = (d: readonly Uint8Array[]): Uint8Array =>
  d.length === 0 ? sha() : d.length === 1 ? refLeaf(d[0]!) : refNode(mth(d.slice(0, refSplit(d.length))), mth(d.slice(refSplit(d.length))));
export const refPath = (m: number, d: readonly Uint8Array[]): Uint8Array[] => {
  if (d.length <= 1) return [];
  const k = refSplit(d.length);
  return m < k ? [...refPath(m, d.slice(0, k)), mth(d.slice(k))] : [...refPath(m - k, d.slice(k)), mth(d.slice(0, k))];
};
const refSubproof = (m: number, d: readonly Uint8Array[], b: boolean): Uint8Array[] => {
  const n = d.length;
  if (m === n) return b ? [] : [mth(d)];
  const k = refSplit(n);
  return m <= k ? [...refSubproof(m, d.slice(0, k), b), mth(d.slice(k))] : [...refSubproof(m - k, d.slice(k), false), mth(d.slice(0, k))];
};
export const refProof = (m: number, d: readonly Uint8Array[]) => (m > 0 && m < d.length ? refSubproof(m, d, true) : []);

/** An Ed25519 key from a 32-byte seed, with C2SP key IDs, vkeys, note signatures and cosignatures. */
export function refKey(seed: Uint8Array) {
  const priv = createPrivateKey({ key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]), format: "der", type: "pkcs8" });
  const publicKey = createPublicKey(priv).export({ format: "der", type: "spki" }).subarray(12);
  const keyId = (name: string, type: number) => createHash("sha256").update(Buffer.concat([Buffer.from(`${name}\n`), Buffer.of(type), publicKey])).digest().subarray(0, 4);
  return {
    publicKey: new Uint8Array(publicKey),
    vkey: (name: string, type = 1) => `${name}+${keyId(name, type).toString("hex")}+${Buffer.concat([Buffer.of(type), publicKey]).toString("base64")}`,
    /** The signature line of a note body. */
    signLine: (name: string, body: string) => `\u2014 ${name} ${Buffer.concat([keyId(name, 1), sign(null, Buffer.from(body), priv)]).toString("base64")}\n`,
    /** A tlog-cosignature/v1 line over a checkpoint body at `timestamp`. */
    cosignLine: (name: string, body: string, timestamp: number) => {
      const time = Buffer.alloc(8);
      time.writeBigUInt64BE(BigInt(timestamp));
      const signature = sign(null, Buffer.from(`cosignature/v1\ntime ${timestamp}\n${body}`), priv);
      return `\u2014 ${name} ${Buffer.concat([keyId(name, 4), time, signature]).toString("base64")}\n`;
    },
  };
}
