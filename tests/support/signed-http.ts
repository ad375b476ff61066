import { createHash } from "node:crypto";
import http from "node:http";
import { signRequest, type SignRequestOptions } from "@/lib/sign-request";
import type { Answer } from "./postgres-city";
import type { TestKey } from "./signed";

/*
 * CITY-SIG/1 requests to a running city (`next start`): signed with lib/sign-request.ts for the
 * authority the request names, and sent with node:http so the Host header is exactly that
 * authority (fetch does not let a caller choose it). The server connected to and the authority
 * named may differ: a second instance behind the same name, as a load balancer sends it, or a
 * signature made for another port.
 */

export interface SignedSend {
  /** The JSON body (serialized once, sent exactly as signed). */
  body?: unknown;
  /** Signing options beyond the request: created, nonce, lifetimeSeconds. */
  sign?: Partial<SignRequestOptions>;
  /** The authority signed and sent as Host (host:port); the connected server's by default. */
  authority?: string;
  /** The Host header sent, when it is not the authority signed. */
  host?: string;
  /** Signature headers made earlier (a replay): sent as they are, nothing signed. */
  headers?: Record<string, string>;
  /** Headers added after signing (accept, a2a-version, mcp-protocol-version). */
  extra?: Record<string, string>;
}

/** An answer with its body's exact text. */
export type RawAnswer = Answer & { text: string };

export type SignedAnswer = RawAnswer & { sent: Record<string, string> };

/** The signature headers of a request to `authority` as the helper makes them. */
export async function signFor(key: TestKey, method: string, authority: string, path: string, options: SignedSend = {}): Promise<Record<string, string>> {
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  return signRequest({ method, url: `http://${authority}${path}`, body, privateKey: key.seed, ...options.sign });
}

/** A signed request to the server at `base` (its URL), named `options.authority` (base's by default). */
export async function signedCall(base: string, key: TestKey, method: string, path: string, options: SignedSend = {}): Promise<SignedAnswer> {
  const authority = options.authority ?? new URL(base).host;
  const signature = options.headers ?? (await signFor(key, method, authority, path, options));
  const answer = await rawCall(base, method, path, {
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    headers: { host: options.host ?? authority, ...(options.body !== undefined ? { "content-type": "application/json" } : {}), ...signature, ...options.extra },
  });
  return { ...answer, sent: signature };
}

/** One request through node:http (any Host header), its answer read as the harness reads one. */
export function rawCall(base: string, method: string, path: string, options: { body?: string; headers?: Record<string, string> } = {}): Promise<RawAnswer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: url.hostname, port: Number(url.port), method, path, headers: { connection: "close", ...options.headers }, agent: false },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (c: Buffer) => chunks.push(c));
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const headers = new Headers();
          for (const [name, value] of Object.entries(response.headers)) {
            if (value === undefined) continue;
            for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
          }
          const type = headers.get("content-type") ?? "";
          let body: Record<string, any>;
          try {
            body = text && type.includes("json") ? (JSON.parse(text) as Record<string, any>) : { text };
          } catch {
            body = { text };
          }
          resolve({ status: response.statusCode ?? 0, type, headers, body, text });
        });
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    if (options.body !== undefined) request.write(options.body);
    request.end();
  });
}

/** The lowercase hex SHA-256 of a key's 32 raw bytes: what a commitment names. */
export function keyHash(key: TestKey): string {
  return createHash("sha256").update(Buffer.from(key.publicKey, "hex")).digest("hex");
}

/** What a committed key signs to rotate (CITY-KEYS/1). */
export const rotationMessage = (did: string, from: string, to: string, nonce: string) => `CITY-KEYS/1|rotate|${did}|${from}|${to}|${nonce}`;
/** What a committed next key signs to open a recovery (CITY-KEYS/1). */
export const nextKeyOpenMessage = (did: string, thumbprint: string, nonce: string) => `CITY-KEYS/1|recover|${did}|${thumbprint}|${nonce}`;
/** What the controller signs to recover (CITY-RECOVER/1). */
export const controllerRecoveryMessage = (did: string, nonce: string) => `CITY-RECOVER/1|recover|${did}|${nonce}`;
