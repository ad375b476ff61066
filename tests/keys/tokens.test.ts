import { randomBytes } from "node:crypto";
import { count, eq, sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { sessionTokens } from "@/db/schema";
import { hashCredential, mintCredential } from "@/lib/city/keys";
import { isCredential } from "@/lib/city/keys/credentials";
import type { AnyDoor } from "@/lib/doors/door";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { serveDoor } from "@/lib/doors/pipeline/http";
import { acceptResidency, readResidency } from "@/lib/doors/declarations/residency/residency";
import { mintToken, revokeAllTokens, revokeToken } from "@/lib/doors/declarations/keys/tokens";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor, presentation } from "../support/gate";
import { expectProblem } from "../support/assertions";

// These suites admit many citizens through the real gate; the flood limits have tests of their own.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

type Answer = { status: number; body: Record<string, any>; headers: Headers };

/** Calls a door with an Authorization header exactly as given (or none), through the real HTTP adapter. */
async function callWithAuthorization(door: AnyDoor, authorization: string | undefined, body?: unknown): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (authorization !== undefined) headers.authorization = authorization;
  const init: RequestInit = { method: door.method, headers };
  if (body !== undefined) {
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await serveDoor(door, new Request(`http://city.test${door.path}`, init));
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {}, headers: response.headers };
}

const mint = (bearer: string | undefined, body: unknown = {}) => callDoor(mintToken, { bearer, body });

describeOnDatabases("gate session tokens", (t) => {
  beforeAll(() => useDatabase(t().db));
  const tokensOf = async (did: string) => (await t().db.select({ n: count() }).from(sessionTokens).where(eq(sessionTokens.did, did)))[0]!.n;

  it("mints a city_st_ token with a citizen secret, expiring after ttl_seconds", async () => {
    const citizen = await admit();
    const before = Date.now();
    const { status, body } = await mint(citizen.citizen_secret, { ttl_seconds: 3600 });
    expect(status).toBe(200);
    expect(body.token).toMatch(/^city_st_[0-9a-f]{72}$/);
    expect(isCredential(body.token, "session")).toBe(true);
    expect(isCredential(body.token, "secret")).toBe(false);
    expect(body.token).not.toBe(citizen.citizen_secret);
    const expires = Date.parse(body.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 3600_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 3600_000 + 1000);
    expect(Math.abs(expires - (Date.parse(body.now_utc) + 3600_000))).toBeLessThan(1000);
  });

  it("mints for a day when no ttl is sent, and accepts the bounds 60 and 2592000", async () => {
    const citizen = await admit();
    for (const [body, seconds] of [
      [{}, 86_400],
      [{ ttl_seconds: 60 }, 60],
      [{ ttl_seconds: 2_592_000 }, 2_592_000],
    ] as const) {
      const answer = await mint(citizen.citizen_secret, body);
      expect(answer.status, JSON.stringify(body)).toBe(200);
      expect(Math.abs(Date.parse(answer.body.expires_at) - (Date.parse(answer.body.now_utc) + seconds * 1000))).toBeLessThan(1000);
    }
  });

  it("stores only the token's sha256, bound to the citizen's DID", async () => {
    const citizen = await admit();
    const { body } = await mint(citizen.citizen_secret);
    const [row] = await t()
      .db.select()
      .from(sessionTokens)
      .where(eq(sessionTokens.tokenHash, hashCredential(body.token)));
    expect(row).toMatchObject({ did: citizen.did, revokedAt: null });
    expect(row!.expiresAt.toISOString()).toBe(body.expires_at);
    const dump = JSON.stringify(await t().db.execute(sql`SELECT row_to_json(s)::text AS r FROM session_tokens s`));
    expect(dump).not.toContain(body.token);
    expect(dump).not.toContain(body.token.slice(8, 40));
  });

  it("opens citizen doors and the caller's own status as a Bearer credential", async () => {
    const citizen = await admit();
    const { token } = (await mint(citizen.citizen_secret)).body;
    const status = await callDoor(readResidency, { bearer: token });
    expect(status.status).toBe(200);
    expect(status.body.status).toMatchObject({ fingerprint: citizen.did, bound: true, residency_status: "bound", tier: "citizen" });
    const accepted = await callDoor(acceptResidency, { bearer: token, body: { actor_kind: "ai" } });
    expect(accepted.status).toBe(200);
    expect(accepted.body.status).toMatchObject({ fingerprint: citizen.did, accepted: true, actor_kind: "ai" });
  });

  it("refuses a session token on mint with 403: a token never mints a token, so none outlives its parent", async () => {
    const citizen = await admit();
    const { token } = (await mint(citizen.citizen_secret, { ttl_seconds: 60 })).body;
    const before = await tokensOf(citizen.did);
    const refused = await mint(token, { ttl_seconds: 2_592_000 });
    expectProblem(refused, 403, "forbidden");
    expect(refused.body.token).toBeUndefined();
    expect(await tokensOf(citizen.did)).toBe(before);
  });

  it("revokes every live session token with POST /api/tokens/revoke-all; the secret keeps working", async () => {
    const citizen = await admit();
    const minted = [];
    for (let i = 0; i < 3; i++) minted.push((await mint(citizen.citizen_secret)).body.token as string);
    const stranger = await admit();
    const strangers = (await mint(stranger.citizen_secret)).body.token as string;
    const answer = await callDoor(revokeAllTokens, { bearer: citizen.citizen_secret });
    expect(answer.status).toBe(200);
    expect(answer.body.revoked).toBe(3);
    for (const token of minted) expectProblem(await callDoor(readResidency, { bearer: token }), 401, "unauthorized");
    const rows = await t().db.select().from(sessionTokens).where(eq(sessionTokens.did, citizen.did));
    expect(rows.map((r) => r.revokedAt !== null)).toEqual([true, true, true]);
    expect((await callDoor(readResidency, { bearer: citizen.citizen_secret })).body.status.fingerprint).toBe(citizen.did);
    // Another citizen's tokens are untouched.
    expect((await callDoor(readResidency, { bearer: strangers })).body.status.fingerprint).toBe(stranger.did);
    // Sent with a session token, it revokes that token too; a second call finds nothing live.
    const fresh = (await mint(citizen.citizen_secret)).body.token as string;
    expect((await callDoor(revokeAllTokens, { bearer: fresh })).body.revoked).toBe(1);
    expectProblem(await callDoor(revokeAllTokens, { bearer: fresh }), 401, "unauthorized");
    expect((await callDoor(revokeAllTokens, { bearer: citizen.citizen_secret })).body.revoked).toBe(0);
  });

  it("revokes the token sent as Bearer with DELETE; afterwards it answers 401", async () => {
    const citizen = await admit();
    const { token, expires_at } = (await mint(citizen.citizen_secret)).body;
    const other = (await mint(citizen.citizen_secret)).body.token as string;
    const revoked = await callDoor(revokeToken, { bearer: token });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ revoked: true, expires_at });
    const [row] = await t()
      .db.select()
      .from(sessionTokens)
      .where(eq(sessionTokens.tokenHash, hashCredential(token)));
    expect(row!.revokedAt).not.toBeNull();

    expectProblem(await mint(token), 401, "unauthorized");
    expectProblem(await callDoor(readResidency, { bearer: token }), 401, "unauthorized");
    expectProblem(await callDoor(acceptResidency, { bearer: token, body: { actor_kind: "ai" } }), 401, "unauthorized");
    expectProblem(await callDoor(revokeToken, { bearer: token }), 401, "unauthorized");
    // Revoking one token leaves the citizen's secret and its other tokens alive.
    expect((await callDoor(readResidency, { bearer: other })).body.status.fingerprint).toBe(citizen.did);
    expect((await callDoor(readResidency, { bearer: citizen.citizen_secret })).body.status.fingerprint).toBe(citizen.did);
  });

  it("answers DELETE with the citizen secret as Bearer with a 400 problem, revoking nothing", async () => {
    const citizen = await admit();
    const { token } = (await mint(citizen.citizen_secret)).body;
    expectProblem(await callDoor(revokeToken, { bearer: citizen.citizen_secret }), 400, "bad_request");
    expect((await callDoor(readResidency, { bearer: citizen.citizen_secret })).status).toBe(200);
    expect((await callDoor(readResidency, { bearer: token })).status).toBe(200);
    const rows = await t().db.select().from(sessionTokens).where(eq(sessionTokens.did, citizen.did));
    expect(rows.every((r) => r.revokedAt === null)).toBe(true);
  });

  it("answers an expired token with 401", async () => {
    const citizen = await admit();
    const expired = mintCredential("session");
    const past = new Date(Date.now() - 3_600_000);
    await t()
      .db.insert(sessionTokens)
      .values({ tokenHash: hashCredential(expired), did: citizen.did, createdAt: new Date(past.getTime() - 60_000), expiresAt: past });
    expectProblem(await mint(expired), 401, "unauthorized");
    expectProblem(await callDoor(readResidency, { bearer: expired }), 401, "unauthorized");
    expectProblem(await callDoor(acceptResidency, { bearer: expired, body: { actor_kind: "ai" } }), 401, "unauthorized");
    // The same token with a live expiry opens the door: the expiry, not the token, refused it.
    const live = mintCredential("session");
    await t()
      .db.insert(sessionTokens)
      .values({ tokenHash: hashCredential(live), did: citizen.did, createdAt: new Date(), expiresAt: new Date(Date.now() + 60_000) });
    expect((await callDoor(acceptResidency, { bearer: live, body: { actor_kind: "ai" } })).status).toBe(200);
  });

  it("answers 401 on mint for a DID, a look receipt, a random string, a malformed header and no header", async () => {
    const citizen = await admit();
    const look = await callDoor(presentGate, { body: presentation({ ask: "look" }) });
    expect(look.body.receipt).toBeDefined();
    const forged = `${citizen.citizen_secret.slice(0, -1)}${citizen.citizen_secret.endsWith("0") ? "1" : "0"}`;
    const unknownSession = mintCredential("session");
    const unknownSecret = mintCredential("secret");
    const before = await tokensOf(citizen.did);
    const cases: [string, string | undefined][] = [
      ["the DID", `Bearer ${citizen.did}`],
      ["a look receipt", `Bearer ${look.body.receipt}`],
      ["a random string", `Bearer ${randomBytes(24).toString("base64url")}`],
      ["a secret with a broken checksum", `Bearer ${forged}`],
      ["a well-formed secret the city never issued", `Bearer ${unknownSecret}`],
      ["a well-formed session token the city never issued", `Bearer ${unknownSession}`],
      ["a recovery-code-shaped credential", `Bearer ${mintCredential("recovery")}`],
      ["Bearer with nothing after it", "Bearer"],
      ["Bearer and a space", "Bearer "],
      ["two tokens", `Bearer ${citizen.citizen_secret} ${citizen.citizen_secret}`],
      ["the secret without the scheme", citizen.citizen_secret],
      ["another scheme", `Basic ${Buffer.from(`${citizen.did}:${citizen.citizen_secret}`).toString("base64")}`],
      ["no header", undefined],
    ];
    for (const [what, authorization] of cases) {
      const answer = await callWithAuthorization(mintToken, authorization, {});
      expect(answer.status, what).toBe(401);
      expectProblem(answer, 401, "unauthorized");
    }
    expect(await tokensOf(citizen.did)).toBe(before);
    // The real secret, sent properly, still works: the refusals above were about the credential.
    expect((await callWithAuthorization(mintToken, `Bearer ${citizen.citizen_secret}`, {})).status).toBe(200);
  });

  it("answers a ttl outside 60..2592000 with a 400 problem, minting nothing", async () => {
    const citizen = await admit();
    for (const ttl_seconds of [59, 0, -1, 2_592_001, 1.5, "3600", null]) {
      expectProblem(await mint(citizen.citizen_secret, { ttl_seconds }), 400, "bad_request");
    }
    expectProblem(await mint(citizen.citizen_secret, { ttl_seconds: 3600, scope: "all" }), 400, "bad_request");
    expect(await tokensOf(citizen.did)).toBe(0);
  });

  it("refuses the 21st mint in an hour with 429, Retry-After and RateLimit headers", async () => {
    const citizen = await admit();
    for (let i = 0; i < 20; i++) expect((await mint(citizen.citizen_secret, { ttl_seconds: 60 })).status, `mint ${i + 1}`).toBe(200);
    const refused = await mint(citizen.citizen_secret, { ttl_seconds: 60 });
    expectProblem(refused, 429, "rate_limited");
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    // At most an hour and one step: the window slides in steps of 5 minutes (the hour in twelve).
    expect(retryAfter).toBeLessThanOrEqual(3900);
    expect(refused.body.retry_after_seconds).toBe(retryAfter);
    expect(refused.body.limit).toMatchObject({ limit: 20, window_seconds: 3600, remaining: 0 });
    expect(refused.headers.get("ratelimit-policy")).toMatch(/q=20/);
    expect(refused.headers.get("ratelimit-policy")).toMatch(/w=3600/);
    expect(refused.headers.get("ratelimit")).toMatch(/r=0/);
    expect(await tokensOf(citizen.did)).toBe(20);
    // The limit is per citizen: another citizen still mints.
    const other = await admit();
    expect((await mint(other.citizen_secret)).status).toBe(200);
  });

  it("stores exactly 20 tokens from 25 parallel mints by one citizen", async () => {
    const citizen = await admit();
    const answers = await Promise.all(Array.from({ length: 25 }, () => mint(citizen.citizen_secret, { ttl_seconds: 600 })));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(20);
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused).toHaveLength(5);
    for (const answer of refused) expectProblem(answer, 429, "rate_limited");
    expect(await tokensOf(citizen.did)).toBe(20);
    expect(new Set(answers.filter((a) => a.status === 200).map((a) => a.body.token)).size).toBe(20);
  });
});
