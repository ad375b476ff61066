import { createHash, createPrivateKey, createPublicKey, sign } from "node:crypto";

/**
 * Independent references for the mutation tests of the log (tests/tlog/*-mutants.test.ts, tests/logs/transparency-log/*-mutants.test.ts):
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
const memo = new WeakMap<readonly Uint8Array[], Map<string, Uint8Array>>();
/** MTH(D[lo:hi]) of one data array, each subtree hashed once per array (the tests ask thousands of times). */
const mthOf = (d: readonly Uint8Array[], lo: number, hi: number): Uint8Array => {
  let known = memo.get(d);
  if (!known) memo.set(d, (known = new Map()));
  const key = `${lo}:${hi}`;
  let hash = known.get(key);
  if (!hash) {
    const n = hi - lo;
    hash = n === 0 ? sha() : n === 1 ? refLeaf(d[lo]!) : refNode(mthOf(d, lo, lo + refSplit(n)), mthOf(d, lo + refSplit(n), hi));
    known.set(key, hash);
  }
  return hash;
};
/** MTH(D[0:n]) (RFC 9162 2.1.1); `size` cuts the array without copying it. */
export const mth = (d: readonly Uint8Array[], size = d.length): Uint8Array => mthOf(d, 0, size);
/** PATH(m, D[0:n]) (RFC 9162 2.1.3.1). */
export const refPath = (m: number, d: readonly Uint8Array[], size = d.length): Uint8Array[] => {
  const path = (m: number, lo: number, hi: number): Uint8Array[] => {
    if (hi - lo <= 1) return [];
    const k = refSplit(hi - lo);
    return m < k ? [...path(m, lo, lo + k), mthOf(d, lo + k, hi)] : [...path(m - k, lo + k, hi), mthOf(d, lo, lo + k)];
  };
  return path(m, 0, size);
};
/** PROOF(m, D[0:n]) (RFC 9162 2.1.4.1). */
export const refProof = (m: number, d: readonly Uint8Array[], size = d.length): Uint8Array[] => {
  const subproof = (m: number, lo: number, hi: number, b: boolean): Uint8Array[] => {
    if (m === hi - lo) return b ? [] : [mthOf(d, lo, hi)];
    const k = refSplit(hi - lo);
    return m <= k ? [...subproof(m, lo, lo + k, b), mthOf(d, lo + k, hi)] : [...subproof(m - k, lo + k, hi, false), mthOf(d, lo, lo + k)];
  };
  return m > 0 && m < size ? subproof(m, 0, size, true) : [];
};

/** An Ed25519 key from a 32-byte seed, with C2SP key IDs, vkeys, note signatures and cosignatures. */
export function refKey(seed: Uint8Array) {
  const priv = createPrivateKey({ key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]), format: "der", type: "pkcs8" });
  const publicKey = createPublicKey(priv).export({ format: "der", type: "spki" }).subarray(12);
  const keyId = (name: string, type: number) =>
    createHash("sha256")
      .update(Buffer.concat([Buffer.from(`${name}\n`), Buffer.of(type), publicKey]))
      .digest()
      .subarray(0, 4);
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
