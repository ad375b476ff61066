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
 * is checked against RFC 9421's own Ed25519 example (tests/unit/sign-request.test.ts).
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
