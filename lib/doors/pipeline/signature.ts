import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import { ExpiredError, httpbis } from "http-message-signatures";
import { type Dictionary, type InnerList, isInnerList, parseDictionary, serializeDictionary, Token } from "structured-headers";
import type { Database } from "@/db/client";
import {
  verifyEd25519Bytes,
  keyEverBound,
  recordHistoryNonce,
  recordNonce,
  type RequestKey,
  requestKeysFor,
  SIGNATURE_CLOCK_SKEW_SECONDS,
  SIGNATURE_MAX_AGE_SECONDS,
  SIGNATURE_MAX_SECONDS,
  type VerifiedSignature,
} from "@/lib/city/keys";
import { activeSigningKey } from "@/lib/city/signing";
import { CityError, type ErrorCode } from "@/lib/errors";
import type { DoorRequest } from "@/lib/doors/door";
import { cityAuthorities, cityIsLoopback } from "./own-hosts";

/*
 * CITY-SIG/1 (docs/signed-requests.md): requests signed with the citizen's own Ed25519 controller key,
 * per RFC 9421 (HTTP Message Signatures), verified here for every surface (the JSON doors, the MCP
 * door, the A2A bridge) through the one caller resolution (lib/doors/pipeline/caller.ts). The structured
 * fields are parsed by `structured-headers` and the signature base is built and checked by
 * `http-message-signatures`; the profile (covered components, times, nonce, keyid) is the city's.
 */

/** The profile's name, as the docs and the problem documents say it. */
export const SIGNATURE_PROFILE = "CITY-SIG/1";
export const NONCE_MIN = 16;
export const NONCE_MAX = 64;
/** At most this many signatures are looked at in one request. */
const MAX_LABELS = 4;
const KNOWN_PARAMS = new Set(["created", "expires", "keyid", "alg", "nonce", "tag"]);

/** What the surface read of the HTTP request before any parsing: its method and the body's bytes, its Content-Digest checked. */
interface CheckedMessage {
  method: string;
  bodyBytes: number;
  verified?: Promise<SignedCaller>;
  /** The nonce was recorded by the surface (spendSurfaceNonce): the doors it runs do not record it again. */
  nonceSpent?: boolean;
}

const checked = new WeakMap<Headers, CheckedMessage>();

/**
 * The checked message of the request being served, for a surface whose library hands the city a
 * copy of the request (the MCP SDK): found again by its signature fields, within this request only.
 */
const serving = new AsyncLocalStorage<{ signature: string | null; input: string | null; message: CheckedMessage }>();

/** checkSignedBody, then `run` with the check known to every copy of the request made meanwhile. */
export async function whileChecked<T>(request: Request, body: Uint8Array, run: () => Promise<T>): Promise<T> {
  checkSignedBody(request, body);
  const message = checked.get(request.headers);
  if (!message) return run();
  return serving.run({ signature: request.headers.get("signature"), input: request.headers.get("signature-input"), message }, run);
}

function checkedMessage(headers: Headers): CheckedMessage | undefined {
  const direct = checked.get(headers);
  if (direct) return direct;
  const store = serving.getStore();
  if (!store || store.signature !== headers.get("signature") || store.input !== headers.get("signature-input")) return undefined;
  checked.set(headers, store.message);
  return store.message;
}

/** Whether a request carries a signature (either of RFC 9421's two fields). */
export function carriesSignature(headers: Headers): boolean {
  return headers.has("signature") || headers.has("signature-input");
}

/**
 * Every surface calls this with the exact bytes of the body as they arrived, before the body is
 * parsed: a signed request's Content-Digest (RFC 9530, sha-256) must match them, and a signed
 * request may not carry Authorization too (one credential per request). Nothing is read from the
 * database. The check is remembered for the request, so the caller resolution knows the body was
 * seen: a signed request no surface checked opens nothing.
 */
export function checkSignedBody(request: Request, body: Uint8Array): void {
  if (!carriesSignature(request.headers)) return;
  if (request.headers.has("authorization")) {
    throw new CityError(
      "credential_conflict",
      "This request carries both Authorization and a signature (Signature-Input, Signature): send one credential per request. Nothing was changed.",
      { headers: acceptSignature(request.method, new URL(request.url), body.byteLength) },
    );
  }
  if (body.byteLength > 0) {
    const header = request.headers.get("content-digest");
    if (!header)
      throw invalid(
        "A signed request with a body must carry Content-Digest: sha-256=:<base64 of the SHA-256 of the exact body bytes>: (RFC 9530), and cover it.",
        request.method,
        new URL(request.url),
        body.byteLength,
      );
    let digests: Dictionary;
    try {
      digests = parseDictionary(header);
    } catch {
      throw invalid(
        "Content-Digest is not a structured dictionary (RFC 9530): send sha-256=:<base64>:.",
        request.method,
        new URL(request.url),
        body.byteLength,
      );
    }
    const member = digests.get("sha-256");
    const claimed = member && !isInnerList(member) && member[0] instanceof ArrayBuffer ? Buffer.from(member[0]) : null;
    if (!claimed)
      throw invalid(
        "Content-Digest must carry a sha-256 member as a byte sequence (sha-256=:<base64>:).",
        request.method,
        new URL(request.url),
        body.byteLength,
      );
    const actual = createHash("sha256").update(body).digest();
    if (claimed.length !== actual.length || !claimed.equals(actual)) {
      throw invalid(
        "The body's SHA-256 is not the one Content-Digest names: the body was changed after it was signed, or the digest was not taken over the exact bytes sent. Nothing was changed.",
        request.method,
        new URL(request.url),
        body.byteLength,
      );
    }
  }
  checked.set(request.headers, { method: request.method.toUpperCase(), bodyBytes: body.byteLength });
}

/** A citizen proven by a signature: its key (and citizen, as read with it) and what the signature said. */
export interface SignedCaller {
  key: RequestKey;
  signed: VerifiedSignature;
}

/**
 * The citizen a request's signature proves, or null when the request carries none. Reads one
 * statement (the keys named by the signatures' keyids, with their citizens), locks nothing and
 * writes nothing: the nonce of a write is recorded by the write's own first statement. Throws a
 * 401 problem (signature_invalid, signature_expired, unknown_key) with Accept-Signature.
 */
export function signedCaller(db: Database, request: DoorRequest, now: Date): Promise<SignedCaller> | null {
  if (!carriesSignature(request.headers)) return null;
  const message = checkedMessage(request.headers);
  if (!message) {
    // A surface that did not check the body: fail closed.
    return Promise.reject(invalid("This request's signature could not be checked against its body here.", request.method, request.url, 1));
  }
  message.verified ??= verify(db, request, message, now);
  if (!message.nonceSpent) return message.verified;
  return message.verified.then((v) => ({ ...v, signed: { ...v.signed, nonce: null } }));
}

/**
 * For a surface whose one POST may run several doors, or a public one (the MCP door, the A2A
 * bridge): verifies a signed POST and records its nonce once, in a statement of its own, before
 * any tool or skill runs, so a replay is refused whatever it calls, public doors included; the
 * doors it then runs do not record it again. Nothing when the request carries no signature.
 */
export async function spendSurfaceNonce(db: Database, request: DoorRequest): Promise<void> {
  const now = new Date();
  const signing = signedCaller(db, request, now);
  if (!signing) return;
  try {
    const { signed } = await signing;
    if (signed.nonce !== null) await recordNonce(db, { ...signed, nonce: signed.nonce }, now);
  } catch (err) {
    throw withAcceptSignature(err, request);
  }
  checkedMessage(request.headers)!.nonceSpent = true;
}

/** What a signature is verified against: a key, whose citizen it signs for, and its rotation. */
type VerifiableKey = Pick<RequestKey, "thumbprint" | "did" | "publicKey" | "rotatedAt" | "exp">;

/**
 * A signature made with a key from the key history of the citizen `did` names (a key ever bound
 * to it, rotated away however long ago: lib/city/keys/key-history.ts), verified as CITY-SIG/1 verifies
 * any, its nonce recorded single use. For a door that takes such a key as proof of nothing but
 * having been that citizen's (a recovery hold, issue 43): no door is opened as the citizen.
 * Throws the 401 problems of any signature, unknown_key when no keyid is a key of that history.
 */
export async function verifyWithKeyHistory(db: Database, request: DoorRequest, did: string, now: Date): Promise<VerifiedSignature> {
  const message = checkedMessage(request.headers);
  if (!message) throw invalid("This request's signature could not be checked against its body here.", request.method, request.url, 1);
  const lookup = async (keyids: string[]): Promise<VerifiableKey[]> => {
    const found: VerifiableKey[] = [];
    for (const keyid of keyids.slice(0, MAX_LABELS)) {
      const publicKey = await keyEverBound(db, did, keyid);
      // A key of the history signs for that citizen whenever it was rotated away: no rotation applies.
      if (publicKey) found.push({ thumbprint: keyid, did, publicKey, rotatedAt: null, exp: null });
    }
    return found;
  };
  try {
    const { signed } = await verify(db, request, message, now, lookup);
    if (signed.nonce !== null) await recordHistoryNonce(db, { ...signed, nonce: signed.nonce });
    return signed;
  } catch (err) {
    throw withAcceptSignature(err, request);
  }
}

export async function verify<K extends VerifiableKey = RequestKey>(
  db: Database,
  request: DoorRequest,
  message: CheckedMessage,
  now: Date,
  lookup: (keyids: string[]) => Promise<K[]> = (keyids) => requestKeysFor(db, keyids, now) as unknown as Promise<K[]>,
): Promise<{ key: K; signed: VerifiedSignature }> {
  const refuse = (code: ErrorCode, detail: string) => new CityError(code, detail, { headers: acceptSignature(message.method, request.url, message.bodyBytes) });
  const inputs = parsed(request.headers.get("signature-input"), "Signature-Input", refuse);
  const signatures = parsed(request.headers.get("signature"), "Signature", refuse);
  const labels = [...inputs.keys()].slice(0, MAX_LABELS);
  const keyidOf = (label: string) => {
    const input = inputs.get(label);
    const keyid = input && isInnerList(input) ? input[1].get("keyid") : undefined;
    return typeof keyid === "string" ? keyid : null;
  };
  const keyids = [...new Set(labels.map(keyidOf).filter((k): k is string => k !== null && k.length > 0 && k.length <= 64))];
  if (keyids.length === 0) throw refuse("signature_invalid", 'Signature-Input names no keyid: sign with keyid="<RFC 7638 thumbprint of your controller key>".');
  const keys = await lookup(keyids);
  // The first signature whose keyid the city knows is the one verified.
  const label = labels.find((l) => keys.some((k) => k.thumbprint === keyidOf(l)));
  if (!label) {
    throw refuse(
      "unknown_key",
      "No signature's keyid is the thumbprint of a live citizen's controller key (or of a key rotated away less than 35 s ago, for a signature made before the rotation, on a door that changes no keys, recovery or residency). GET /api/peers/{did}/keys shows a citizen's keys.",
    );
  }
  const keyid = keyidOf(label)!;
  const owners = keys.filter((k) => k.thumbprint === keyid);
  if (new Set(owners.map((k) => k.did)).size > 1) {
    throw refuse(
      "unknown_key",
      "That key is the controller of more than one citizen, so it does not say which one signs: bind a key of its own to each citizen.",
    );
  }
  const key = owners[0]!;
  const input = inputs.get(label) as InnerList;
  const signature = signatures.get(label);
  if (!signature || isInnerList(signature) || !(signature[0] instanceof ArrayBuffer))
    throw refuse("signature_invalid", `Signature has no byte sequence for the label ${label}.`);
  const signed = profile(input, request, message, key, now, refuse);
  const authority = authorityOf(request);
  if (authority === null)
    throw refuse(
      "signature_invalid",
      "The request is addressed (Host) to a host this city does not answer as: a signature is good only for the city it was made for.",
    );
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    if (name !== "signature" && name !== "signature-input") headers[name] = value;
  });
  headers["signature-input"] = serializeDictionary(new Map([[label, input]]));
  headers["signature"] = serializeDictionary(new Map([[label, signature]]));
  let verified: boolean | null;
  try {
    verified = await httpbis.verifyMessage(
      {
        keyLookup: async (params) =>
          params.keyid === keyid
            ? { id: keyid, algs: ["ed25519"], verify: (data, sig) => verifyEd25519Bytes(key.publicKey, new Uint8Array(sig), new Uint8Array(data)) }
            : null,
        // The authority the client addressed: its Host header, as RFC 9421 section 2.2.3 says (a
        // server behind a proxy may see another URL), checked above to be one of the city's own.
        componentParser: (name, params) => (name === "@authority" && !params.has("req") ? [authority] : null),
        // The times were checked above on the city's clock; the library checks them again on its own.
        notAfter: new Date(now.getTime() + SIGNATURE_CLOCK_SKEW_SECONDS * 1000 + 1000),
      },
      { method: message.method, url: request.url, headers },
    );
  } catch (err) {
    const expired = err instanceof ExpiredError;
    throw refuse(
      expired ? "signature_expired" : "signature_invalid",
      expired ? "The signature has expired." : "The signature base could not be built from this request (a covered component is missing or malformed).",
    );
  }
  if (verified !== true) {
    throw refuse(
      "signature_invalid",
      "The signature does not verify over this request (strict Ed25519 over the RFC 9421 signature base): the method, authority, path, query, a covered header or the key differ from what was signed. Nothing was changed.",
    );
  }
  return { key, signed };
}

export function parsed(value: string | null, field: string, refuse: (code: ErrorCode, detail: string) => CityError): Dictionary {
  if (!value) throw refuse("signature_invalid", `A signed request carries both Signature-Input and Signature; ${field} is missing.`);
  try {
    return parseDictionary(value);
  } catch {
    throw refuse("signature_invalid", `${field} is not a structured dictionary (RFC 8941).`);
  }
}

/** The CITY-SIG/1 rules on the chosen signature: its covered components and parameters, and its times on the city's clock. */
export function profile(
  input: InnerList,
  request: DoorRequest,
  message: CheckedMessage,
  key: VerifiableKey,
  now: Date,
  refuse: (code: ErrorCode, detail: string) => CityError,
): VerifiedSignature {
  const components = input[0].map(([name, params]) => (typeof name === "string" && params.size === 0 ? name : null));
  if (components.some((c) => c === null))
    throw refuse("signature_invalid", 'Covered components are plain strings without parameters in this profile (for example "@method").');
  const required = requiredComponents(message.method, request.url, message.bodyBytes);
  const missing = required.filter((c) => !components.includes(c));
  if (missing.length > 0)
    throw refuse(
      "signature_invalid",
      `The signature must cover ${required.map((c) => `"${c}"`).join(" ")}; it does not cover ${missing.map((c) => `"${c}"`).join(" ")}.`,
    );
  const params = input[1];
  for (const name of params.keys())
    if (!KNOWN_PARAMS.has(name))
      throw refuse("signature_invalid", `Unknown signature parameter ${JSON.stringify(name)}: this profile knows created, expires, keyid, alg, nonce and tag.`);
  const created = params.get("created");
  const expires = params.get("expires");
  if (!Number.isInteger(created) || !Number.isInteger(expires))
    throw refuse("signature_invalid", "created and expires are required, as integers (seconds since the epoch).");
  const alg = params.get("alg");
  if (alg !== undefined && alg !== "ed25519") throw refuse("signature_invalid", 'alg, when sent, is "ed25519".');
  const tag = params.get("tag");
  if (tag !== undefined && typeof tag !== "string") throw refuse("signature_invalid", "tag, when sent, is a string.");
  const nonce = params.get("nonce");
  const write = !["GET", "HEAD"].includes(message.method);
  if (nonce !== undefined && (typeof nonce !== "string" || nonce.length < NONCE_MIN || nonce.length > NONCE_MAX)) {
    throw refuse("signature_invalid", `nonce is a string of ${NONCE_MIN} to ${NONCE_MAX} characters.`);
  }
  if (write && nonce === undefined)
    throw refuse("signature_invalid", `A signed ${message.method} needs a nonce (${NONCE_MIN} to ${NONCE_MAX} characters, single use with this key).`);
  const seconds = Math.floor(now.getTime() / 1000);
  const [c, e] = [created as number, expires as number];
  if (e <= c || e - c > SIGNATURE_MAX_SECONDS) throw refuse("signature_invalid", `expires comes after created, at most ${SIGNATURE_MAX_SECONDS} s after it.`);
  if (c > seconds + SIGNATURE_CLOCK_SKEW_SECONDS)
    throw refuse(
      "signature_expired",
      `created is ${c - seconds} s ahead of the city's clock (at most ${SIGNATURE_CLOCK_SKEW_SECONDS} s are allowed): sign with the time now; every answer's now_utc says the city's.`,
    );
  if (seconds - c > SIGNATURE_MAX_AGE_SECONDS)
    throw refuse(
      "signature_expired",
      `created is ${seconds - c} s behind the city's clock: a signature must reach the city within ${SIGNATURE_MAX_AGE_SECONDS} s of being made. Sign the request again with the time now; every answer's now_utc says the city's.`,
    );
  if (e <= seconds)
    throw refuse(
      "signature_expired",
      `The signature expired ${seconds - e + 1} s ago: sign the request again (expires at most ${SIGNATURE_MAX_SECONDS} s after created).`,
    );
  // `created` is a whole second: a signature is known to be made before the rotation only when its
  // second was over by then (one stamped with the rotation's own second may have been made after it).
  if (key.rotatedAt && (c + 1) * 1000 > key.rotatedAt.getTime()) {
    throw refuse(
      "unknown_key",
      `That key was rotated away at ${key.rotatedAt.toISOString()}: only a signature made before then is accepted with it, until ${key.exp?.toISOString()}. Sign with the controller key now.`,
    );
  }
  return { did: key.did, keyid: key.thumbprint, created: new Date(c * 1000), expires: new Date(e * 1000), nonce: write ? (nonce as string) : null };
}

/**
 * The request's authority as RFC 9421 derives it: the Host header (lowercased, the scheme's default
 * port left out), or the URL's when there is none. Null when it is not one of the authorities the
 * city answers as, host and port both (CITY_BASE_URL's, the deployment's Vercel hosts, and, only
 * when CITY_BASE_URL is loopback, the loopback names on its port and the URL the server was
 * reached at): a request signed for another
 * service, another port of this machine, or a development city on the signer's own machine is not
 * accepted here by sending that Host.
 */
export function authorityOf(request: DoorRequest): string | null {
  const authority = requestAuthority(request.url, request.headers);
  return authority !== null && isCityAuthority(authority, request.url) ? authority : null;
}

/** One of the city's authorities (cityAuthorities), or on a loopback city the URL it was reached at. */
export function isCityAuthority(authority: string, url: URL): boolean {
  return cityAuthorities().includes(authority) || (cityIsLoopback() && authority === url.host);
}

/** The authority a request carried (its Host header, else its URL's), normalised as RFC 9421 says; null when unparsable. */
export function requestAuthority(url: URL, headers: Headers): string | null {
  const host = headers.get("host")?.trim().toLowerCase();
  try {
    return (host ? new URL(`${url.protocol}//${host}`) : url).host;
  } catch {
    return null;
  }
}

/** The components a request must cover: method, authority and path; the query when it has one; the digest when it has a body. */
export function requiredComponents(method: string, url: URL, bodyBytes: number): string[] {
  return ["@method", "@authority", "@path", ...(url.search ? ["@query"] : []), ...(bodyBytes > 0 ? ["content-digest"] : [])];
}

/** Accept-Signature (RFC 9421 section 5.1): the components and parameters this request's signature needs. */
export function acceptSignature(method: string, url: URL, bodyBytes: number): Record<string, string> {
  const params = new Map<string, string | boolean | Token>([
    ["created", true],
    ["expires", true],
    ["keyid", true],
    ["alg", "ed25519"],
  ]);
  if (!["GET", "HEAD"].includes(method.toUpperCase())) params.set("nonce", true);
  const list: InnerList = [requiredComponents(method.toUpperCase(), url, bodyBytes).map((c) => [c, new Map()]), params];
  return { "Accept-Signature": serializeDictionary(new Map([["sig1", list]])) };
}

/**
 * A refusal of a signed request met after its signature verified (a replayed nonce, a key rotated
 * away meanwhile), with the Accept-Signature header every signature refusal carries.
 */
export function withAcceptSignature(err: unknown, request: DoorRequest): unknown {
  if (!(err instanceof CityError) || err.status !== 401 || err.options.headers) return err;
  const message = checkedMessage(request.headers);
  return new CityError(err.code, err.detail, {
    ...err.options,
    headers: acceptSignature(message?.method ?? request.method, request.url, message?.bodyBytes ?? 0),
  });
}

/** The tag of the city's signature on a key directory's answer (draft-meunier-http-message-signatures-directory). */
export const DIRECTORY_TAG = "http-message-signatures-directory";

/**
 * Signs an answer of the city (a citizen's key directory) per RFC 9421 with the city's own key
 * (the first of /.well-known/jwks.json; keyid = its RFC 7638 thumbprint): covered
 * `"@authority";req` and `"content-digest"` (RFC 9530, over the exact bytes sent), created and
 * expires (300 s), `tag`. The headers to add to the answer.
 */
export async function signAnswer(db: Database, body: string, request: Request, tag: string): Promise<Record<string, string>> {
  const key = await activeSigningKey(db);
  const digest = `sha-256=:${createHash("sha256").update(body, "utf8").digest("base64")}:`;
  const created = new Date(Math.floor(Date.now() / 1000) * 1000);
  const signed = await httpbis.signMessage(
    {
      key: { id: key.kid, alg: "ed25519", sign: async (data) => Buffer.from(await crypto.subtle.sign("Ed25519", key.privateKey, new Uint8Array(data))) },
      name: "sig1",
      fields: ['"@authority";req', "content-digest"],
      params: ["created", "expires", "keyid", "alg", "tag"],
      paramValues: { created, expires: new Date(created.getTime() + SIGNATURE_MAX_SECONDS * 1000), tag },
    },
    { status: 200, headers: { "content-digest": digest } },
    // "@authority";req is the authority the client asked (its Host), so a verifier that named the
    // city by another of its hosts checks the base it expects.
    { method: request.method, url: answeredUrl(request), headers: {} },
  );
  const headers = signed.headers as Record<string, string>;
  return {
    "Content-Digest": digest,
    "Signature-Input": String(headers["Signature-Input"] ?? headers["signature-input"]),
    Signature: String(headers["Signature"] ?? headers["signature"]),
  };
}

/** The URL of a request with the authority it carried (its Host header) when that is one of the city's, for the answer's "@authority";req. */
function answeredUrl(request: Request): string {
  const url = new URL(request.url);
  const authority = requestAuthority(url, request.headers);
  if (authority && isCityAuthority(authority, url)) url.host = authority;
  return url.toString();
}

function invalid(detail: string, method: string, url: URL, bodyBytes: number): CityError {
  return new CityError("signature_invalid", detail, { headers: acceptSignature(method, url, bodyBytes) });
}
