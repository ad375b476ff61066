import * as ed from "@noble/ed25519";
import { bytesToHex } from "@noble/hashes/utils.js";
import type { AnyDoor } from "@/lib/doors/door";
import { serveDoor } from "@/lib/doors/pipeline/http";
import { jwkThumbprint } from "@/lib/city/keys";
import { importSeed, signatureBase, signatureParams, signBase, signRequest, type SignRequestOptions } from "@/lib/sign-request";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { admit, callDoor, freshNonce, presentation } from "./gate";

/** A controller key: its seed (what the helper signs with), public key hex and keyid. */
export interface TestKey {
  seed: Uint8Array;
  publicKey: string;
  keyid: string;
  /** Signs a message (a gate nonce) as the gate wants it: hex over the UTF-8. */
  signHex: (message: string) => Promise<string>;
}

export async function newKey(): Promise<TestKey> {
  const seed = ed.utils.randomSecretKey();
  const publicKey = bytesToHex(await ed.getPublicKeyAsync(seed));
  return { seed, publicKey, keyid: jwkThumbprint(publicKey), signHex: async (m) => bytesToHex(await ed.signAsync(new TextEncoder().encode(m), seed)) };
}

/** A citizen admitted with a controller key bound at its first admission. */
export async function admitWithKey(overrides: Record<string, unknown> = {}) {
  const key = await newKey();
  const nonce = await freshNonce();
  const admitted = await admit({ nonce, controller_public_key: key.publicKey, controller_signature: await key.signHex(nonce), ...overrides });
  return { ...admitted, key };
}

export type Answer = { status: number; body: Record<string, any>; headers: Headers };

export interface SignedCall {
  body?: unknown;
  params?: Record<string, string>;
  query?: string;
  /** Signing options beyond the request (created, nonce, lifetime). */
  sign?: Partial<SignRequestOptions>;
  /** Headers added after signing (Authorization, to send two credentials). */
  extra?: Record<string, string>;
  /** Changes the request after it was signed. */
  tamper?: (request: { url: string; body: string | undefined; headers: Record<string, string> }) => void;
  /** The URL signed, when it is not the one sent. */
  signedUrl?: string;
  /** Precomputed signature headers (a replay). */
  headers?: Record<string, string>;
}

export function urlOf(door: AnyDoor, options: Pick<SignedCall, "params" | "query"> = {}): string {
  let path = door.path;
  for (const [k, v] of Object.entries(options.params ?? {})) path = path.replace(`{${k}}`, encodeURIComponent(v));
  return `http://city.test${path}${options.query ?? ""}`;
}

/** The signature headers of a door's request as the helper makes them. */
export async function signFor(door: AnyDoor, key: TestKey, options: SignedCall = {}): Promise<Record<string, string>> {
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  return signRequest({ method: door.method, url: options.signedUrl ?? urlOf(door, options), body, privateKey: key.seed, ...options.sign });
}

/** Calls a door through the real HTTP adapter with a request signed by `key`. */
export async function callSigned(door: AnyDoor, key: TestKey, options: SignedCall = {}): Promise<Answer & { sent: Record<string, string> }> {
  const request = {
    url: urlOf(door, options),
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    headers: {} as Record<string, string>,
  };
  const signature = options.headers ?? (await signFor(door, key, options));
  request.headers = { ...(request.body !== undefined ? { "content-type": "application/json" } : {}), ...signature, ...options.extra };
  options.tamper?.(request);
  const response = await serveDoor(door, new Request(request.url, { method: door.method, headers: request.headers, body: request.body }), options.params ?? {});
  const text = await response.text();
  const type = response.headers.get("content-type") ?? "";
  return { status: response.status, body: type.includes("json") ? JSON.parse(text) : { text }, headers: response.headers, sent: signature };
}

/**
 * Signature headers built by hand over the components given (name and value), for requests the
 * helper would never make (a component left out).
 */
export async function signComponents(
  key: TestKey,
  components: [string, string][],
  params: [string, string | number][],
  body?: string,
): Promise<Record<string, string>> {
  const { privateKey } = await importSeed(key.seed);
  const input = signatureParams(
    components.map(([n]) => n),
    params,
  );
  const signature = await signBase(privateKey, signatureBase(components, input));
  const headers: Record<string, string> = { "signature-input": `sig1=${input}`, signature: `sig1=:${Buffer.from(signature).toString("base64")}:` };
  if (body !== undefined) headers["content-digest"] = `sha-256=:${(await import("node:crypto")).createHash("sha256").update(body).digest("base64")}:`;
  return headers;
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);

/** The gate's rotation, as before signed requests: the secret, the current key's and the next key's signatures over a nonce. */
export async function rotateAtGate(me: { citizen_secret: string; key: TestKey }, name: string, next: TestKey) {
  const nonce = await freshNonce();
  return callDoor(presentGate, {
    bearer: me.citizen_secret,
    body: presentation({
      name,
      nonce,
      controller_signature: await me.key.signHex(nonce),
      next_controller_public_key: next.publicKey,
      next_controller_signature: await next.signHex(nonce),
    }),
  });
}
