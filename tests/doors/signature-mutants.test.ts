import { generateKeyPairSync, sign } from "node:crypto";
import { type InnerList, parseDictionary } from "structured-headers";
import { afterEach, describe, expect, it } from "vitest";
import type { RequestKey } from "@/lib/city/keys";
import type { DoorRequest } from "@/lib/doors/door";
import {
  acceptSignature,
  authorityOf,
  isCityAuthority,
  NONCE_MAX,
  NONCE_MIN,
  parsed,
  profile,
  requestAuthority,
  requiredComponents,
  verify,
} from "@/lib/doors/pipeline/signature";
import { forgetEnv } from "@/lib/env";
import { CityError, type ErrorCode } from "@/lib/errors";

/**
 * The pure parts of CITY-SIG/1 (lib/doors/pipeline/signature.ts: the profile's checks, the fields'
 * parsing, the authority rule, the keyid choice) against fixed vectors written out here: the
 * profile's numbers as docs/signed-requests.md gives them (5 s of clock skew, 30 s of age, 300 s of
 * life, nonces of 16 to 64 characters), and RFC 9421 signature bases written by hand and signed
 * with node:crypto's Ed25519, so the oracle never calls the code it judges. No database: the keys
 * a signature names are looked up in a table of the test's own.
 */
const BASE_URL = "https://city.example";
process.env.CITY_BASE_URL = BASE_URL;
delete process.env.VERCEL_URL;
delete process.env.VERCEL_BRANCH_URL;
delete process.env.VERCEL_PROJECT_PRODUCTION_URL;
forgetEnv();
afterEach(() => {
  process.env.CITY_BASE_URL = BASE_URL;
  forgetEnv();
});

// The city's clock: 1,800,000,000 s and 999 ms (the profile counts whole seconds, rounded down).
const SECONDS = 1_800_000_000;
const NOW = new Date(SECONDS * 1000 + 999);

const refuse = (code: ErrorCode, detail: string) => new CityError(code, detail);

/** What profile/verify threw: its code and detail. */
function refusal(run: () => unknown): { code: string; detail: string } {
  try {
    run();
  } catch (err) {
    if (err instanceof CityError) return { code: err.code, detail: err.detail };
    throw err;
  }
  throw new Error("no refusal");
}

async function refusalOf(run: Promise<unknown>): Promise<{ code: string; detail: string }> {
  try {
    await run;
  } catch (err) {
    if (err instanceof CityError) return { code: err.code, detail: err.detail };
    throw err;
  }
  throw new Error("no refusal");
}

interface Key {
  thumbprint: string;
  did: string;
  publicKey: string;
  rotatedAt: Date | null;
  exp: Date | null;
}
const KEY: Key = { thumbprint: "kid-1", did: "did:key:z6Mkalice", publicKey: "00".repeat(32), rotatedAt: null, exp: null };

const NONCE_16 = "n".repeat(16);

function inputOf(text: string): InnerList {
  return parseDictionary(`sig1=${text}`).get("sig1") as InnerList;
}

function request(method: string, url: string, headers: Record<string, string> = {}): DoorRequest {
  return { method, url: new URL(url), headers: new Headers(headers), ip: null };
}

/** profile() on a GET of /api/x (no query, no body) unless told, at NOW. */
function checkProfile(params: string, options: { method?: string; url?: string; bodyBytes?: number; components?: string; key?: Key } = {}) {
  const method = options.method ?? "GET";
  const components = options.components ?? '("@method" "@authority" "@path")';
  return profile(
    inputOf(`${components}${params}`),
    request(method, options.url ?? `${BASE_URL}/api/x`),
    { method, bodyBytes: options.bodyBytes ?? 0 },
    options.key ?? KEY,
    NOW,
    refuse,
  );
}

const times = (created: number, expires: number) => `;created=${created};expires=${expires};keyid="kid-1"`;

describe("the profile's times on the city's clock", () => {
  it("takes created exactly 5 s ahead of the clock, refuses 6 s ahead (signature_expired)", () => {
    expect(checkProfile(times(SECONDS + 5, SECONDS + 60)).created).toEqual(new Date((SECONDS + 5) * 1000));
    expect(refusal(() => checkProfile(times(SECONDS + 6, SECONDS + 60)))).toEqual({
      code: "signature_expired",
      detail: "created is 6 s ahead of the city's clock (at most 5 s are allowed): sign with the time now; every answer's now_utc says the city's.",
    });
  });

  it("takes created exactly 30 s behind (the clock's whole second, its milliseconds dropped), refuses 31 s", () => {
    expect(checkProfile(times(SECONDS - 30, SECONDS + 10)).created).toEqual(new Date((SECONDS - 30) * 1000));
    expect(refusal(() => checkProfile(times(SECONDS - 31, SECONDS + 10)))).toEqual({
      code: "signature_expired",
      detail:
        "created is 31 s behind the city's clock: a signature must reach the city within 30 s of being made. Sign the request again with the time now; every answer's now_utc says the city's.",
    });
  });

  it("refuses a signature whose expires is the clock's second, takes one a second later", () => {
    expect(refusal(() => checkProfile(times(SECONDS - 10, SECONDS)))).toEqual({
      code: "signature_expired",
      detail: "The signature expired 1 s ago: sign the request again (expires at most 300 s after created).",
    });
    expect(refusal(() => checkProfile(times(SECONDS - 10, SECONDS - 2))).detail).toMatch(/^The signature expired 3 s ago/);
    expect(checkProfile(times(SECONDS - 10, SECONDS + 1)).expires).toEqual(new Date((SECONDS + 1) * 1000));
  });

  it("takes a life of exactly 300 s, refuses 301 s and an expires at or before created", () => {
    const invalid = { code: "signature_invalid", detail: "expires comes after created, at most 300 s after it." };
    expect(checkProfile(times(SECONDS, SECONDS + 300)).expires).toEqual(new Date((SECONDS + 300) * 1000));
    expect(refusal(() => checkProfile(times(SECONDS, SECONDS + 301)))).toEqual(invalid);
    expect(refusal(() => checkProfile(times(SECONDS, SECONDS)))).toEqual(invalid);
    expect(refusal(() => checkProfile(times(SECONDS, SECONDS - 1)))).toEqual(invalid);
    expect(checkProfile(times(SECONDS, SECONDS + 1)).expires).toEqual(new Date((SECONDS + 1) * 1000));
  });

  it("needs created and expires as integers", () => {
    const invalid = { code: "signature_invalid", detail: "created and expires are required, as integers (seconds since the epoch)." };
    expect(refusal(() => checkProfile(`;expires=${SECONDS + 10};keyid="kid-1"`))).toEqual(invalid);
    expect(refusal(() => checkProfile(`;created=${SECONDS};keyid="kid-1"`))).toEqual(invalid);
    expect(refusal(() => checkProfile(`;created=${SECONDS}.5;expires=${SECONDS + 10}`))).toEqual(invalid);
    expect(refusal(() => checkProfile(`;created=${SECONDS};expires="${SECONDS + 10}"`))).toEqual(invalid);
  });

  it("refuses a key's signature created in or after its rotation's second, takes one whose second was over by then", () => {
    // Rotated half a second into the signature's second: it may have been made after the rotation.
    const rotated = { ...KEY, rotatedAt: new Date(SECONDS * 1000 + 500), exp: new Date(SECONDS * 1000 + 35_000) };
    expect(refusal(() => checkProfile(times(SECONDS, SECONDS + 10), { key: rotated }))).toEqual({
      code: "unknown_key",
      detail: `That key was rotated away at ${new Date(SECONDS * 1000 + 500).toISOString()}: only a signature made before then is accepted with it, until ${new Date(SECONDS * 1000 + 35_000).toISOString()}. Sign with the controller key now.`,
    });
    expect(refusal(() => checkProfile(times(SECONDS + 1, SECONDS + 10), { key: rotated })).code).toBe("unknown_key");
    // Rotated as the signature's second ended, or later: made before it.
    const atItsEnd = { ...rotated, rotatedAt: new Date((SECONDS + 1) * 1000) };
    expect(checkProfile(times(SECONDS, SECONDS + 10), { key: atItsEnd }).keyid).toBe("kid-1");
    expect(checkProfile(times(SECONDS - 1, SECONDS + 10), { key: rotated }).keyid).toBe("kid-1");
  });

  it("answers the key's citizen and thumbprint, the times as dates", () => {
    expect(checkProfile(times(SECONDS - 1, SECONDS + 9))).toEqual({
      did: "did:key:z6Mkalice",
      keyid: "kid-1",
      created: new Date((SECONDS - 1) * 1000),
      expires: new Date((SECONDS + 9) * 1000),
      nonce: null,
    });
  });
});

describe("the profile's nonce", () => {
  const post = (nonce: string) => checkProfile(`${times(SECONDS, SECONDS + 10)};nonce=${nonce}`, { method: "POST" });
  const nonceRule = { code: "signature_invalid", detail: "nonce is a string of 16 to 64 characters." };

  it("takes 16 and 64 characters, refuses 15 and 65", () => {
    expect([NONCE_MIN, NONCE_MAX]).toEqual([16, 64]);
    expect(refusal(() => post(`"${"a".repeat(15)}"`))).toEqual(nonceRule);
    expect(post(`"${"a".repeat(16)}"`).nonce).toBe("a".repeat(16));
    expect(post(`"${"b".repeat(64)}"`).nonce).toBe("b".repeat(64));
    expect(refusal(() => post(`"${"c".repeat(65)}"`))).toEqual(nonceRule);
  });

  it("is a string: a token or an integer is refused", () => {
    expect(refusal(() => post("abcdefghijklmnopq"))).toEqual(nonceRule);
    expect(refusal(() => post("123456789012345678".slice(0, 15)))).toEqual(nonceRule);
  });

  it("is required on a write, not on GET or HEAD; a read's nonce is not answered (nothing to spend)", () => {
    for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
      expect(refusal(() => checkProfile(times(SECONDS, SECONDS + 10), { method }))).toEqual({
        code: "signature_invalid",
        detail: `A signed ${method} needs a nonce (16 to 64 characters, single use with this key).`,
      });
    }
    for (const method of ["GET", "HEAD"]) {
      expect(checkProfile(times(SECONDS, SECONDS + 10), { method }).nonce).toBeNull();
      expect(checkProfile(`${times(SECONDS, SECONDS + 10)};nonce="${NONCE_16}"`, { method }).nonce).toBeNull();
      // A read's nonce is still held to the format.
      expect(refusal(() => checkProfile(`${times(SECONDS, SECONDS + 10)};nonce="short"`, { method }))).toEqual(nonceRule);
    }
  });
});

describe("the profile's components and parameters", () => {
  const ok = times(SECONDS, SECONDS + 10);

  it("needs method, authority and path; the query when the URL has one; the digest when there is a body", () => {
    expect(refusal(() => checkProfile(ok, { components: '("@method" "@path")' }))).toEqual({
      code: "signature_invalid",
      detail: 'The signature must cover "@method" "@authority" "@path"; it does not cover "@authority".',
    });
    expect(refusal(() => checkProfile(ok, { url: `${BASE_URL}/api/x?a=1` }))).toEqual({
      code: "signature_invalid",
      detail: 'The signature must cover "@method" "@authority" "@path" "@query"; it does not cover "@query".',
    });
    expect(refusal(() => checkProfile(`${ok};nonce="${NONCE_16}"`, { method: "POST", bodyBytes: 1, components: '("@path")' }))).toEqual({
      code: "signature_invalid",
      detail: 'The signature must cover "@method" "@authority" "@path" "content-digest"; it does not cover "@method" "@authority" "content-digest".',
    });
    const all = '("content-digest" "@query" "@path" "@authority" "@method" "x-extra")';
    expect(checkProfile(`${ok};nonce="${NONCE_16}"`, { method: "POST", url: `${BASE_URL}/api/x?a=1`, bodyBytes: 1, components: all }).nonce).toBe(NONCE_16);
    // An empty body needs no digest; "?" alone is no query.
    expect(checkProfile(`${ok};nonce="${NONCE_16}"`, { method: "POST", url: `${BASE_URL}/api/x?`, bodyBytes: 0 }).nonce).toBe(NONCE_16);
  });

  it("takes components only as plain strings without parameters", () => {
    const plain = { code: "signature_invalid", detail: 'Covered components are plain strings without parameters in this profile (for example "@method").' };
    expect(refusal(() => checkProfile(ok, { components: '("@method" "@authority";req "@path")' }))).toEqual(plain);
    expect(refusal(() => checkProfile(ok, { components: '("@method" "@authority" "@path" token)' }))).toEqual(plain);
  });

  it("knows created, expires, keyid, alg, nonce and tag, nothing else", () => {
    expect(checkProfile(`${ok};alg="ed25519";tag="t";nonce="${NONCE_16}"`).did).toBe(KEY.did);
    expect(refusal(() => checkProfile(`${ok};context="x"`))).toEqual({
      code: "signature_invalid",
      detail: 'Unknown signature parameter "context": this profile knows created, expires, keyid, alg, nonce and tag.',
    });
  });

  it('takes alg only as "ed25519", tag only as a string', () => {
    expect(refusal(() => checkProfile(`${ok};alg="rsa-pss-sha512"`))).toEqual({ code: "signature_invalid", detail: 'alg, when sent, is "ed25519".' });
    expect(refusal(() => checkProfile(`${ok};tag=7`))).toEqual({ code: "signature_invalid", detail: "tag, when sent, is a string." });
  });
});

describe("the fields' parsing", () => {
  it("names the missing field, or the one that is not a dictionary", () => {
    expect(refusal(() => parsed(null, "Signature-Input", refuse))).toEqual({
      code: "signature_invalid",
      detail: "A signed request carries both Signature-Input and Signature; Signature-Input is missing.",
    });
    expect(refusal(() => parsed("", "Signature", refuse)).detail).toBe("A signed request carries both Signature-Input and Signature; Signature is missing.");
    expect(refusal(() => parsed("sig1=(((", "Signature", refuse))).toEqual({
      code: "signature_invalid",
      detail: "Signature is not a structured dictionary (RFC 8941).",
    });
    expect([...parsed('a=1, b="x"', "Signature", refuse).keys()]).toEqual(["a", "b"]);
  });
});

describe("the authority rule", () => {
  it("is the Host header, lowercased and trimmed, the scheme's default port left out; the URL's only without one", () => {
    const url = new URL("http://127.0.0.1:3000/api/x");
    expect(requestAuthority(url, new Headers({ host: " City.Example:80 " }))).toBe("city.example");
    expect(requestAuthority(new URL("https://10.0.0.1/x"), new Headers({ host: "city.example:443" }))).toBe("city.example");
    expect(requestAuthority(url, new Headers({ host: "city.example:8443" }))).toBe("city.example:8443");
    expect(requestAuthority(url, new Headers())).toBe("127.0.0.1:3000");
    expect(requestAuthority(url, new Headers({ host: "a b" }))).toBeNull();
  });

  it("is one of the city's: CITY_BASE_URL's host, not the URL reached unless the city is loopback", () => {
    const reached = new URL("http://10.0.0.1:3000/x");
    expect(isCityAuthority("city.example", reached)).toBe(true);
    expect(isCityAuthority("other.example", reached)).toBe(false);
    expect(isCityAuthority("10.0.0.1:3000", reached)).toBe(false);
    expect(authorityOf(request("GET", "http://10.0.0.1:3000/x", { host: "CITY.example" }))).toBe("city.example");
    expect(authorityOf(request("GET", "http://10.0.0.1:3000/x", { host: "other.example" }))).toBeNull();
    expect(authorityOf(request("GET", "http://10.0.0.1:3000/x", { host: "a b" }))).toBeNull();
    // No Host: the URL's own authority, here not the city's.
    expect(authorityOf(request("GET", "http://10.0.0.1:3000/x"))).toBeNull();

    process.env.CITY_BASE_URL = "http://localhost:3000";
    forgetEnv();
    expect(isCityAuthority("127.0.0.1:3000", new URL("http://10.0.0.1:3000/x"))).toBe(true);
    expect(isCityAuthority("10.0.0.1:3000", new URL("http://10.0.0.1:3000/x"))).toBe(true);
    expect(isCityAuthority("10.0.0.2:3000", new URL("http://10.0.0.1:3000/x"))).toBe(false);
    expect(isCityAuthority("127.0.0.1:3001", new URL("http://10.0.0.1:3000/x"))).toBe(false);
  });

  it("says what a signature must cover, and Accept-Signature asks it", () => {
    expect(requiredComponents("GET", new URL(`${BASE_URL}/x`), 0)).toEqual(["@method", "@authority", "@path"]);
    expect(requiredComponents("POST", new URL(`${BASE_URL}/x?q`), 3)).toEqual(["@method", "@authority", "@path", "@query", "content-digest"]);
    expect(acceptSignature("get", new URL(`${BASE_URL}/x`), 0)).toEqual({
      "Accept-Signature": 'sig1=("@method" "@authority" "@path");created;expires;keyid;alg="ed25519"',
    });
    expect(acceptSignature("head", new URL(`${BASE_URL}/x`), 0)["Accept-Signature"]).not.toContain("nonce");
    expect(acceptSignature("post", new URL(`${BASE_URL}/x?q=1`), 2)).toEqual({
      "Accept-Signature": 'sig1=("@method" "@authority" "@path" "@query" "content-digest");created;expires;keyid;alg="ed25519";nonce',
    });
  });
});

// A real signature: the RFC 9421 base written out by hand, signed with node:crypto's Ed25519.
function keyPair() {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const x = publicKey.export({ format: "jwk" }).x!;
  return { privateKey, hex: Buffer.from(x, "base64url").toString("hex") };
}

const ALICE = keyPair();
const CREATED = SECONDS - 1;
const EXPIRES = SECONDS + 60;

function signedGet(
  options: {
    keyid?: string;
    authority?: string;
    path?: string;
    privateKey?: ReturnType<typeof keyPair>["privateKey"];
    label?: string;
    extra?: string;
    alg?: boolean;
  } = {},
) {
  const keyid = options.keyid ?? "kid-1";
  const covered = options.extra === undefined ? "" : ' "x-extra"';
  const params = `("@method" "@authority" "@path"${covered});created=${CREATED};expires=${EXPIRES};keyid="${keyid}"${options.alg ? ';alg="ed25519"' : ""}`;
  const extraLine = options.extra === undefined ? "" : `"x-extra": ${options.extra}\n`;
  const base = `"@method": GET\n"@authority": ${options.authority ?? "city.example"}\n"@path": ${options.path ?? "/api/x"}\n${extraLine}"@signature-params": ${params}`;
  const signature = sign(null, Buffer.from(base), options.privateKey ?? ALICE.privateKey).toString("base64");
  const label = options.label ?? "sig1";
  return { input: `${label}=${params}`, signature: `${label}=:${signature}:` };
}

function table(keys: Array<Pick<RequestKey, "thumbprint" | "did" | "publicKey">>) {
  const asked: string[][] = [];
  const lookup = async (keyids: string[]) => {
    asked.push(keyids);
    return keys.filter((k) => keyids.includes(k.thumbprint)).map((k) => ({ ...k, rotatedAt: null, exp: null }) as unknown as RequestKey);
  };
  return { asked, lookup };
}

const aliceKey = { thumbprint: "kid-1", did: "did:key:z6Mkalice", publicKey: ALICE.hex };

function verifyGet(headers: Record<string, string>, lookup: ReturnType<typeof table>["lookup"], url = "http://10.0.0.1:3000/api/x") {
  const req = request("GET", url, { host: "city.example", ...headers });
  return verify(null as never, req, { method: "GET", bodyBytes: 0 }, NOW, lookup);
}

describe("the chosen signature and its key", () => {
  it("passes a covered header to the signature base, and an alg of ed25519", async () => {
    const s = signedGet({ extra: "kept", alg: true });
    expect((await verifyGet({ "x-extra": "kept", "signature-input": s.input, signature: s.signature }, table([aliceKey]).lookup)).signed.keyid).toBe("kid-1");
    expect((await refusalOf(verifyGet({ "x-extra": "changed", "signature-input": s.input, signature: s.signature }, table([aliceKey]).lookup))).code).toBe(
      "signature_invalid",
    );
  });

  it("verifies over the Host the client sent as RFC 9421 normalises it (lowercase, the default port left out)", async () => {
    const s = signedGet();
    expect((await verifyGet({ host: "City.Example:80", "signature-input": s.input, signature: s.signature }, table([aliceKey]).lookup)).key.did).toBe(
      "did:key:z6Mkalice",
    );
  });

  it("verifies the first known label's key alone when two labels name keys of two citizens", async () => {
    const bob = keyPair();
    const first = signedGet();
    const second = signedGet({ keyid: "kid-2", label: "sig2", privateKey: bob.privateKey });
    const both = table([aliceKey, { thumbprint: "kid-2", did: "did:key:z6Mkbob", publicKey: bob.hex }]).lookup;
    const headers = { "signature-input": `${first.input}, ${second.input}`, signature: `${first.signature}, ${second.signature}` };
    expect((await verifyGet(headers, both)).key.did).toBe("did:key:z6Mkalice");
  });

  it("verifies a signature over the Host the client addressed, not the URL the server was reached at", async () => {
    const s = signedGet();
    const { key, signed } = await verifyGet({ "signature-input": s.input, signature: s.signature }, table([aliceKey]).lookup);
    expect(key.did).toBe("did:key:z6Mkalice");
    expect(signed).toEqual({ did: "did:key:z6Mkalice", keyid: "kid-1", created: new Date(CREATED * 1000), expires: new Date(EXPIRES * 1000), nonce: null });
  });

  it("refuses it when the path or the authority differs from what was signed", async () => {
    const s = signedGet({ path: "/api/y" });
    expect(await refusalOf(verifyGet({ "signature-input": s.input, signature: s.signature }, table([aliceKey]).lookup))).toEqual({
      code: "signature_invalid",
      detail:
        "The signature does not verify over this request (strict Ed25519 over the RFC 9421 signature base): the method, authority, path, query, a covered header or the key differ from what was signed. Nothing was changed.",
    });
    const reached = signedGet({ authority: "10.0.0.1:3000" });
    expect((await refusalOf(verifyGet({ "signature-input": reached.input, signature: reached.signature }, table([aliceKey]).lookup))).code).toBe(
      "signature_invalid",
    );
  });

  it("refuses a Host that is not the city's before any key is tried", async () => {
    const s = signedGet({ authority: "other.example" });
    expect(await refusalOf(verifyGet({ host: "other.example", "signature-input": s.input, signature: s.signature }, table([aliceKey]).lookup))).toEqual({
      code: "signature_invalid",
      detail: "The request is addressed (Host) to a host this city does not answer as: a signature is good only for the city it was made for.",
    });
  });

  it("refuses a small-order key's signature that holds for every message (R = identity, S = 0)", async () => {
    const identity = "01" + "00".repeat(31);
    const s = signedGet();
    const forged = `sig1=:${Buffer.from(identity + "00".repeat(32), "hex").toString("base64")}:`;
    const lookup = table([{ thumbprint: "kid-1", did: "did:key:z6Mksmall", publicKey: identity }]).lookup;
    expect((await refusalOf(verifyGet({ "signature-input": s.input, signature: forged }, lookup))).code).toBe("signature_invalid");
  });

  it("refuses a key that is the controller of two citizens: it does not say which one signs", async () => {
    const s = signedGet();
    const shared = table([aliceKey, { ...aliceKey, did: "did:key:z6Mkbob" }]).lookup;
    expect(await refusalOf(verifyGet({ "signature-input": s.input, signature: s.signature }, shared))).toEqual({
      code: "unknown_key",
      detail: "That key is the controller of more than one citizen, so it does not say which one signs: bind a key of its own to each citizen.",
    });
    // Two rows of one citizen's key are one owner.
    const twice = table([aliceKey, { ...aliceKey }]).lookup;
    expect((await verifyGet({ "signature-input": s.input, signature: s.signature }, twice)).key.did).toBe("did:key:z6Mkalice");
  });

  it("verifies the first signature whose keyid the city knows, of the first four, each keyid asked once", async () => {
    const s = signedGet();
    const inputs = `sig0=("@method");created=${CREATED};expires=${EXPIRES};keyid="unknown", ${s.input}`;
    const signatures = `sig0=:AAAA:, ${s.signature}`;
    const known = table([aliceKey]);
    expect((await verifyGet({ "signature-input": inputs, signature: signatures }, known.lookup)).signed.keyid).toBe("kid-1");
    expect(known.asked).toEqual([["unknown", "kid-1"]]);

    const dup = table([aliceKey]);
    const twice = `${s.input.replace("sig1", "a")}, ${s.input.replace("sig1", "b")}, ${s.input}`;
    const twiceSig = `a=:AAAA:, b=:AAAA:, ${s.signature}`;
    // The first label with a known keyid is the one verified: here "a", whose signature is wrong.
    expect((await refusalOf(verifyGet({ "signature-input": twice, signature: twiceSig }, dup.lookup))).code).toBe("signature_invalid");
    expect(dup.asked).toEqual([["kid-1"]]);

    const fifth = table([aliceKey]);
    const four = ["a", "b", "c", "d"].map((l) => `${l}=("@method");created=${CREATED};expires=${EXPIRES};keyid="x${l}"`).join(", ");
    expect(await refusalOf(verifyGet({ "signature-input": `${four}, ${s.input}`, signature: s.signature }, fifth.lookup))).toMatchObject({
      code: "unknown_key",
    });
    expect(fifth.asked).toEqual([["xa", "xb", "xc", "xd"]]);
  });

  it("takes keyids of 1 to 64 characters only; none is signature_invalid", async () => {
    const noKeyid = {
      code: "signature_invalid",
      detail: 'Signature-Input names no keyid: sign with keyid="<RFC 7638 thumbprint of your controller key>".',
    };
    const long = "k".repeat(65);
    for (const keyid of ["", long]) {
      const s = signedGet({ keyid });
      expect(await refusalOf(verifyGet({ "signature-input": s.input, signature: s.signature }, table([{ ...aliceKey, thumbprint: keyid }]).lookup))).toEqual(
        noKeyid,
      );
    }
    const tokenKeyid = `sig1=("@method" "@authority" "@path");created=${CREATED};expires=${EXPIRES};keyid=kid`;
    expect(await refusalOf(verifyGet({ "signature-input": tokenKeyid, signature: "sig1=:AAAA:" }, table([]).lookup))).toEqual(noKeyid);
    expect(await refusalOf(verifyGet({ "signature-input": "sig1=1", signature: "sig1=:AAAA:" }, table([]).lookup))).toEqual(noKeyid);
    // A keyid on an item, not an inner list of components, is none.
    expect(await refusalOf(verifyGet({ "signature-input": 'sig1=1;keyid="kid-1"', signature: "sig1=:AAAA:" }, table([aliceKey]).lookup))).toEqual(noKeyid);
    const k64 = "k".repeat(64);
    const s = signedGet({ keyid: k64 });
    expect((await verifyGet({ "signature-input": s.input, signature: s.signature }, table([{ ...aliceKey, thumbprint: k64 }]).lookup)).signed.keyid).toBe(k64);
  });

  it("refuses an unknown keyid, and a label without a byte sequence in Signature", async () => {
    const s = signedGet();
    expect(await refusalOf(verifyGet({ "signature-input": s.input, signature: s.signature }, table([]).lookup))).toEqual({
      code: "unknown_key",
      detail:
        "No signature's keyid is the thumbprint of a live citizen's controller key (or of a key rotated away less than 35 s ago, for a signature made before the rotation, on a door that changes no keys, recovery or residency). GET /api/peers/{did}/keys shows a citizen's keys.",
    });
    expect((await refusalOf(verifyGet({ signature: s.signature }, table([aliceKey]).lookup))).detail).toBe(
      "A signed request carries both Signature-Input and Signature; Signature-Input is missing.",
    );
    const noBytes = { code: "signature_invalid", detail: "Signature has no byte sequence for the label sig1." };
    for (const signature of ["other=:AAAA:", "sig1=(:AAAA:)", 'sig1="AAAA"']) {
      expect(await refusalOf(verifyGet({ "signature-input": s.input, signature }, table([aliceKey]).lookup))).toEqual(noBytes);
    }
    expect((await refusalOf(verifyGet({ "signature-input": s.input }, table([aliceKey]).lookup))).detail).toBe(
      "A signed request carries both Signature-Input and Signature; Signature is missing.",
    );
  });

  it("says that a covered component it cannot build is missing", async () => {
    const params = `("@method" "@authority" "@path" "x-absent");created=${CREATED};expires=${EXPIRES};keyid="kid-1"`;
    expect(await refusalOf(verifyGet({ "signature-input": `sig1=${params}`, signature: "sig1=:AAAA:" }, table([aliceKey]).lookup))).toEqual({
      code: "signature_invalid",
      detail: "The signature base could not be built from this request (a covered component is missing or malformed).",
    });
  });

  it("carries Accept-Signature on every refusal", async () => {
    const s = signedGet();
    try {
      await verifyGet({ "signature-input": s.input, signature: s.signature }, table([]).lookup);
      expect.unreachable();
    } catch (err) {
      expect((err as CityError).options.headers).toEqual({
        "Accept-Signature": 'sig1=("@method" "@authority" "@path");created;expires;keyid;alg="ed25519"',
      });
    }
  });
});
