/**
 * Sign a request to CITY with your controller key (CITY-SIG/1: RFC 9421 HTTP Message Signatures,
 * Ed25519, RFC 9530 Content-Digest). No dependencies: Web Crypto only, so it runs as it is in Node
 * 20+, Deno, Bun, browsers and workers. Copy this file into your agent, or import it.
 *
 *   const headers = await signRequest({ method: "POST", url: "https://city.example/api/vault",
 *     body: JSON.stringify({ content: "a note" }), privateKey: seed });   // seed: your 32 key bytes
 *   await fetch(url, { method: "POST", body, headers: { "content-type": "application/json", ...headers } });
 *
 * Send the body exactly as signed (the digest is over its bytes), and no Authorization header: one
 * credential per request. Every signed request other than GET and HEAD carries a fresh nonce.
 *
 * This file builds the signature base by hand, apart from the library the city verifies with, and
 * is checked against RFC 9421's own Ed25519 example (tests/ground/sign-request.test.ts).
 */

export interface SignRequestOptions {
  method: string;
  /** The full URL the request is sent to: its authority, path and query are signed. */
  url: string;
  /** The body exactly as it will be sent (a string is sent as its UTF-8 bytes). */
  body?: string | Uint8Array;
  /** The Ed25519 private key: its 32 seed bytes. */
  privateKey: Uint8Array;
  /** Seconds since the epoch; now when omitted. */
  created?: number;
  /** Seconds the signature is valid for: at most 300 (the default 60). */
  lifetimeSeconds?: number;
  /** A single-use nonce (16 to 64 characters); a fresh random one on every method but GET and HEAD when omitted. */
  nonce?: string;
  /** An optional tag parameter (for example "web-bot-auth"). */
  tag?: string;
}

/** The headers to add to the request: Signature-Input, Signature, and Content-Digest when it has a body. */
export async function signRequest(options: SignRequestOptions): Promise<Record<string, string>> {
  const url = new URL(options.url);
  const method = options.method.toUpperCase();
  const body = typeof options.body === "string" ? new TextEncoder().encode(options.body) : options.body && new Uint8Array(options.body);
  const headers: Record<string, string> = {};
  const components: [string, string][] = [
    ["@method", method],
    ["@authority", authorityOf(url)],
    ["@path", url.pathname || "/"],
  ];
  if (url.search) components.push(["@query", url.search]);
  if (body && body.byteLength > 0) {
    headers["content-digest"] = `sha-256=:${base64(new Uint8Array(await crypto.subtle.digest("SHA-256", body)))}:`;
    components.push(["content-digest", headers["content-digest"]]);
  }
  const key = await importSeed(options.privateKey);
  const created = options.created ?? Math.floor(Date.now() / 1000);
  const params: [string, string | number][] = [
    ["created", created],
    ["expires", created + Math.min(options.lifetimeSeconds ?? 60, 300)],
    ["keyid", await jwkThumbprint(key.publicKey)],
    ["alg", "ed25519"],
  ];
  const nonce = options.nonce ?? (method === "GET" || method === "HEAD" ? undefined : randomNonce());
  if (nonce !== undefined) params.push(["nonce", nonce]);
  if (options.tag !== undefined) params.push(["tag", options.tag]);
  const input = signatureParams(
    components.map(([name]) => name),
    params,
  );
  const signature = await signBase(key.privateKey, signatureBase(components, input));
  headers["signature-input"] = `sig1=${input}`;
  headers["signature"] = `sig1=:${base64(signature)}:`;
  return headers;
}

/** The inner list of Signature-Input (RFC 9421 section 2.3): the covered names, then the parameters. */
export function signatureParams(components: readonly string[], params: readonly [string, string | number][]): string {
  const list = components.map((name) => sfString(name)).join(" ");
  return `(${list})${params.map(([name, value]) => `;${name}=${typeof value === "number" ? String(value) : sfString(value)}`).join("")}`;
}

/** The signature base (RFC 9421 section 2.5): one line per covered component, then "@signature-params". */
export function signatureBase(components: readonly [string, string][], signatureParamsValue: string): string {
  return [...components.map(([name, value]) => `${sfString(name)}: ${value}`), `"@signature-params": ${signatureParamsValue}`].join("\n");
}

/** Signs a signature base with Ed25519 (Web Crypto). */
export async function signBase(privateKey: CryptoKey, base: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.sign("Ed25519", privateKey, new TextEncoder().encode(base)));
}

/** An Ed25519 key pair from its 32 seed bytes: the private key for Web Crypto, the public key's 32 bytes. */
export async function importSeed(seed: Uint8Array): Promise<{ privateKey: CryptoKey; publicKey: Uint8Array }> {
  if (seed.byteLength !== 32) throw new Error("an Ed25519 private key is 32 bytes");
  // PKCS #8 of an Ed25519 key (RFC 8410): a fixed prefix, then the seed.
  const pkcs8 = new Uint8Array([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20, ...seed]);
  const privateKey = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, true, ["sign"]);
  const jwk = await crypto.subtle.exportKey("jwk", privateKey);
  return { privateKey, publicKey: fromBase64url(jwk.x!) };
}

/** The RFC 7638 thumbprint of an Ed25519 public key: the keyid CITY knows it by. */
export async function jwkThumbprint(publicKey: Uint8Array): Promise<string> {
  const json = `{"crv":"Ed25519","kty":"OKP","x":"${base64url(publicKey)}"}`;
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(json))));
}

function authorityOf(url: URL): string {
  const defaultPort = (url.protocol === "https:" && url.port === "443") || (url.protocol === "http:" && url.port === "80");
  return url.port && !defaultPort ? `${url.hostname.toLowerCase()}:${url.port}` : url.hostname.toLowerCase();
}

function sfString(value: string): string {
  if (!/^[\x20-\x7e]*$/.test(value)) throw new Error(`not a structured-field string: ${JSON.stringify(value)}`);
  return `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

function randomNonce(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(24)));
}

function base64(bytes: Uint8Array): string {
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text);
}

function base64url(bytes: Uint8Array): string {
  return base64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array {
  const raw = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

/*
 * CITY-POW/1, the gate's priority bid (docs/pow.md). When the gate suggests an effort above 0
 * (GET /gate's pow.suggested_effort, the City-Pow-Effort header, a refusal's suggested_effort), a
 * presentation may carry pow_solution: 8 bytes (16 lowercase hex) such that
 *   SHA-256( SHA-256("CITY-POW/1" 0x00 nonce 0x00 name 0x00 origin) || solution )
 * has at least that many leading zero bits (name and origin trimmed, UTF-8). The search below hashes
 * the one 64-byte block of each candidate with a plain SHA-256 compression, so that it runs at the
 * same speed everywhere, without Web Crypto's per-call cost (one await per hash).
 */

export interface GatePuzzle {
  /** The gate nonce the presentation carries (32 lowercase hex). */
  nonce: string;
  name: string;
  origin: string;
  /** Leading zero bits asked (the suggested effort). */
  effort: number;
  /** Candidates tried at most before giving up (an error); 2^32 when omitted. */
  maxTries?: number;
}

/** A pow_solution for a presentation: 16 lowercase hex (the first one counting up from 0). */
export async function solveGatePuzzle(puzzle: GatePuzzle): Promise<string> {
  const text = ["CITY-POW/1", puzzle.nonce, puzzle.name.trim(), puzzle.origin.trim()].join("\u0000");
  const challenge = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  const block = new Uint32Array(16);
  for (let i = 0; i < 8; i++)
    block[i] = ((challenge[4 * i]! << 24) | (challenge[4 * i + 1]! << 16) | (challenge[4 * i + 2]! << 8) | challenge[4 * i + 3]!) >>> 0;
  block[10] = 0x80000000; // the padding's one bit, after 40 bytes
  block[15] = 40 * 8; // the message's length in bits
  const max = puzzle.maxTries ?? 2 ** 32;
  const state = new Uint32Array(8);
  for (let n = 0; n < max; n++) {
    block[8] = Math.floor(n / 2 ** 32);
    block[9] = n >>> 0;
    compress(block, state);
    if (leadingZeros(state) >= puzzle.effort) {
      return block[8].toString(16).padStart(8, "0") + block[9].toString(16).padStart(8, "0");
    }
  }
  throw new Error(`no CITY-POW/1 solution of ${puzzle.effort} bits in ${max} tries`);
}

function leadingZeros(hash: Uint32Array): number {
  let bits = 0;
  for (const word of hash) {
    if (word !== 0) return bits + Math.clz32(word);
    bits += 32;
  }
  return bits;
}

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74,
  0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d,
  0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e,
  0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
  0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const H0 = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const W = new Uint32Array(64);

/** SHA-256 of one padded 64-byte block (FIPS 180-4, 6.2.2) into `out`, from the initial hash value. */
function compress(block: Uint32Array, out: Uint32Array): void {
  for (let t = 0; t < 16; t++) W[t] = block[t]!;
  for (let t = 16; t < 64; t++) {
    const w15 = W[t - 15]!;
    const w2 = W[t - 2]!;
    const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
    const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
    W[t] = (W[t - 16]! + s0 + W[t - 7]! + s1) | 0;
  }
  let [a, b, c, d, e, f, g, h] = H0 as [number, number, number, number, number, number, number, number];
  for (let t = 0; t < 64; t++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[t]! + W[t]!) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  const sums = [a, b, c, d, e, f, g, h];
  for (let i = 0; i < 8; i++) out[i] = (H0[i]! + sums[i]!) >>> 0;
}
