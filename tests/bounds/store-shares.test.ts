import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { SIGNATURE_CLOCK_SKEW_SECONDS, SIGNATURE_MAX_AGE_SECONDS } from "@/lib/city/keys";
import { SIGNED_WRITES_PER_KEY, noncesPerKeyMost } from "@/lib/city/keys/request-keys";
import { storeBound, citizenSubject, storeShares, visitorSubject } from "@/lib/city/bounds";
import { subjectHourShare, subjectHourShareSql } from "@/lib/city/bounds/store-shares";
import { A2A_TASK_LEAST_BYTES, A2A_TASK_MAX_BYTES } from "@/lib/city/a2a";
import { writeVault } from "@/lib/doors/declarations/shelves/vault";
import { readAndFileWard } from "@/lib/doors/declarations/ward/ward";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { env } from "@/lib/env";
import { STORE_NAMES, STORE_STANDING_DAYS } from "@/lib/store-limits";
import { expectProblem } from "../support/assertions";
import { describeOnDatabases } from "../support/databases";
import { setStripeCounters, stripeCounters } from "../support/store-stripes";
import { admit, callDoor, presentation } from "../support/gate";
import { awayFromHourTurn } from "../support/clock";

// Shares per subject, the reserve and the per-citizen totals (issue 43). Every store gets the same
// small bounds (env() reads them on first use); the oracle is the published arithmetic with fixed
// vectors: of 100,000 bytes an hour newcomers share 25,000; one newcomer (or one visitor source)
// 5 % of that, 1,250; a settled citizen 2 % of the hour per day in the city, at most 4 days; a
// citizen's own total 1 per mille of 10,000,000; the newcomers' line 8,000,000 (the reserve 2,000,000).
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
process.env.CITY_GATE_ADMISSIONS_PER_HOUR = "0";
const TOTAL = 10_000_000;
const PER_HOUR = 100_000;
const SHARE = 25_000;
for (const part of ["VAULT", "MAIL", "POSTS", "QUARANTINE", "CHECKPOINTS", "SEALS", "LANTERNS", "WARD", "A2A_TASKS", "APPEALS", "IDENTITY_LOG"]) {
  process.env[`CITY_STORE_${part}_BYTES`] = String(TOTAL);
  process.env[`CITY_STORE_${part}_BYTES_PER_HOUR`] = String(PER_HOUR);
}
process.env.CITY_STORE_NEWCOMER_PERCENT = "25";
process.env.CITY_STORE_NEWCOMER_SUBJECT_PERCENT = "5";
process.env.CITY_STORE_SUBJECT_PERCENT = "2";
process.env.CITY_STORE_SUBJECT_TOTAL_PERMILLE = "1";
const ROW = 64;

/** Each store's vector: whether a citizen has its own total there. */
const OWN_TOTAL: Record<string, boolean> = {
  vault: true,
  mail: true,
  posts: true,
  quarantine: true,
  checkpoints: false,
  seals: true,
  lanterns: false,
  ward: true,
  a2a_tasks: false,
  appeals: true,
  identity_log: false,
};

describe("the share arithmetic, fixed vectors", () => {
  for (const store of STORE_NAMES) {
    it(`${store}: shares, reserve and own total`, () => {
      const s = storeShares(store);
      expect(s).toEqual({
        store,
        newcomerSubjectPerHour: 1_250,
        newcomerNetworkPerHour: 5_000,
        networkPerHour: 10_000,
        settledPerHourPerDay: 2_000,
        subjectTotal: OWN_TOTAL[store] ? 10_000 : null,
        newcomerTotal: 8_000_000,
        reserveTotal: 2_000_000,
        reservePerHour: 75_000,
      });
      expect(storeBound(store).newcomerTotal).toBe(8_000_000);
      const days: [number | null, number][] = [
        [null, 1_250],
        [0, 1_250],
        [0.99, 1_250],
        [1, 2_000],
        [2, 4_000],
        [3.5, 6_000],
        [4, 8_000],
        [365, 8_000],
      ];
      for (const [d, share] of days) expect(subjectHourShare(s, d), `${store} at ${d} days`).toBe(share);
    });
  }

  it("the signature nonce store: one key keeps at most its own share of nonces (no city-wide row)", () => {
    // 240 signed writes a minute per key, each nonce kept at most 31 s + the 5 s skew: 240 + 4/s x 36 s.
    expect(SIGNED_WRITES_PER_KEY).toEqual({ limit: 240, windowSeconds: 60 });
    expect(SIGNATURE_MAX_AGE_SECONDS + 1 + SIGNATURE_CLOCK_SKEW_SECONDS).toBe(36);
    expect(noncesPerKeyMost()).toBe(384);
  });

  it("a reserve is at least a fifth, rounded up; the newcomers' percent can never take it", () => {
    const odd = storeShares("vault", { ...env(), CITY_STORE_VAULT_BYTES: 1_000_003 });
    expect(odd.reserveTotal).toBe(200_001);
    expect(odd.newcomerTotal).toBe(800_002);
    const max = storeShares("identity_log", { ...env(), CITY_STORE_IDENTITY_LOG_BYTES: Number.MAX_SAFE_INTEGER });
    expect(max.reserveTotal).toBeGreaterThanOrEqual(Number.MAX_SAFE_INTEGER / 5);
  });

  it("visitor sources: an IPv4 /24, an IPv6 /48 (the /64 a client address is read as), one subject for the unknown", () => {
    expect(visitorSubject("203.0.113.77")).toBe("src:203.0.113.0/24");
    expect(visitorSubject("2001:db8:aa:1::/64")).toBe("src:2001:db8:aa::/48");
    expect(visitorSubject("2001:db8:aa:ffff::/64")).toBe("src:2001:db8:aa::/48");
    expect(visitorSubject(null)).toBe("src:unknown");
    expect(citizenSubject("ab".repeat(32))).toBe(`did:${"ab".repeat(32)}`);
  });

  it("the A2A look-ahead reserves the least a kept task takes, not the largest", () => {
    expect(A2A_TASK_LEAST_BYTES).toBeLessThan(1_024);
    expect(A2A_TASK_MAX_BYTES).toBe(32_768);
  });
});

describeOnDatabases("shares per subject, the reserve and each citizen's own total (issue 43)", (t) => {
  beforeAll(() => useDatabase(t().db));
  const bounds = { total: TOTAL, perHour: PER_HOUR, newcomerPerHour: SHARE };
  const set = async (store: string, c: { total: number; hour: number; newcomer: number }) => {
    await awayFromHourTurn(5_000);
    await setStripeCounters(t().db, store, c, bounds);
  };
  const note = (n: number) => `note ${randomBytes(4).toString("hex")} `.padEnd(n, "x");
  const write = (secret: string, n = 400) => callDoor(writeVault, { bearer: secret, body: { content: note(n) } });
  const ageDays = (did: string, days: number) =>
    t().raw(`UPDATE citizens SET bound_at = now() - interval '${days * 24} hours' - interval '1 minute' WHERE did = '${did}'`);

  it("the SQL share is the arithmetic's, by a citizen's days in the city", async () => {
    const shares = storeShares("vault");
    const now = new Date();
    for (const days of [0, 1, 2, 3, 4, 9]) {
      const me = await admit();
      if (days) await ageDays(me.did, days);
      const [row] = rowsOf<{ s: string }>(await t().db.execute(sql`SELECT ${subjectHourShareSql(shares, me.did, now)} AS s`));
      expect(Number(row!.s), `${days} days`).toBe(subjectHourShare(shares, days));
    }
    const [visitor] = rowsOf<{ s: string }>(await t().db.execute(sql`SELECT ${subjectHourShareSql(shares, null, now)} AS s`));
    expect(Number(visitor!.s)).toBe(1_250);
  });

  it("one newcomer fills only its own share of the newcomers' hour (429 past it), and the next newcomer still writes", async () => {
    await set("vault", { total: 0, hour: 0, newcomer: 0 });
    const flooder = await admit();
    // 464 bytes a note: 2 fit in 1,250, the third does not.
    for (let i = 0; i < 2; i++) expect((await write(flooder.citizen_secret)).status).toBe(200);
    const refused = await write(flooder.citizen_secret);
    const problem = expectProblem(refused, 429, "rate_limited");
    expect(problem.limit).toMatchObject({ name: "city_vault_subject_bytes_per_hour", limit: 1_250, window_seconds: 3600, remaining: 1_250 - 928 });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await stripeCounters(t().db, "vault")).toEqual({ total: 928, hour: 928, newcomer: 928 });
    const next = await admit();
    expect((await write(next.citizen_secret)).status).toBe(200);
    // A settled citizen's share grows with its standing: 3 days, 6,000 bytes.
    const old = await admit();
    await ageDays(old.did, 3);
    for (let i = 0; i < 12; i++) expect((await write(old.citizen_secret)).status, `note ${i}`).toBe(200);
    expectProblem(await write(old.citizen_secret, 600), 429, "rate_limited");
  });

  it("the reserve: newcomers stop at the newcomers' line of the total; a settled citizen writes on", async () => {
    await set("vault", { total: 8_000_000 - 100, hour: 0, newcomer: 0 });
    const newcomer = await admit();
    const refused = await write(newcomer.citizen_secret);
    const problem = expectProblem(refused, 507, "city_full");
    expect(problem.limit).toMatchObject({ name: "city_vault_newcomer_bytes", limit: 8_000_000, remaining: 100 });
    expect(problem.detail).toMatch(/reserve/);
    // When to try again: when this newcomer settles, a day after its admission (issue 43, item 7).
    expect(problem.detail).toMatch(/This citizen may write here once it has lived 86400 s in the city: try again in \d+ s\./);
    expect(problem.retry_after_seconds).toBeGreaterThan(86_400 - 120);
    expect(problem.retry_after_seconds).toBeLessThanOrEqual(86_400);
    expect(refused.headers.get("retry-after")).toBe(String(problem.retry_after_seconds));
    const settled = await admit();
    await ageDays(settled.did, 1);
    expect((await write(settled.citizen_secret)).status).toBe(200);
    expect((await stripeCounters(t().db, "vault")).total).toBe(8_000_000 - 100 + 464);
  });

  it("a citizen's own total in an append-only store: 409 limit_reached past it, the store not full for anyone else", async () => {
    await set("vault", { total: 0, hour: 0, newcomer: 0 });
    const me = await admit();
    await ageDays(me.did, 4);
    await t().raw(`INSERT INTO city_store_subjects (store, subject, total_bytes) VALUES ('vault', 'did:${me.did}', ${10_000 - 463})`);
    const refused = await write(me.citizen_secret);
    const problem = expectProblem(refused, 409, "limit_reached");
    expect(problem.limit).toMatchObject({ name: "city_vault_citizen_bytes", limit: 10_000, remaining: 463 });
    expect((await write(me.citizen_secret, 400 - 20)).status).toBe(200);
    const other = await admit();
    expect((await write(other.citizen_secret)).status).toBe(200);
  });

  it("a ward request at the gate counts in its source's share of the ward's newcomers' hour (429 past it); another network still files", async () => {
    await set("ward", { total: 0, hour: 0, newcomer: 0 });
    // 5 % of the newcomers' 25,000 bytes: 1,250 a source; each request here charges about 560.
    const request = (ip: string) =>
      callDoor(presentGate, {
        ip,
        body: presentation({ ask: "ward", name: `ward-${randomBytes(6).toString("hex")}`, statement: `I keep looping. ${randomBytes(240).toString("hex")}` }),
      });
    for (let i = 0; i < 2; i++) {
      const filed = await request(`198.51.100.${10 + i}`);
      expect(filed.body.verdict, JSON.stringify(filed.body)).toBe("observer");
    }
    const refused = await request("198.51.100.12");
    const problem = expectProblem(refused, 429, "rate_limited");
    expect(problem.limit).toMatchObject({ name: "city_ward_subject_bytes_per_hour", limit: 1250 });
    expect((await request("203.0.113.10")).body.verdict).toBe("observer");
  });

  it("a visitor's charge sweeps two visitor rows whose hour is over, oldest first; never a citizen's row, nor one of this hour", async () => {
    await set("ward", { total: 0, hour: 0, newcomer: 0 });
    await t().raw(`DELETE FROM city_store_subjects WHERE store = 'ward'`);
    await t().raw(`INSERT INTO city_store_subjects (store, subject, hour_start, hour_bytes, total_bytes) VALUES
      ('ward', 'src:192.0.2.0/24', now() - interval '3 hours', 10, 10),
      ('ward', 'src:192.0.3.0/24', now() - interval '5 hours', 10, 10),
      ('ward', 'src:192.0.4.0/24', now() - interval '2 hours', 10, 10),
      ('ward', 'did:${"ab".repeat(32)}', now() - interval '9 hours', 10, 10),
      ('ward', 'src:198.18.0.0/24', date_trunc('hour', now()), 10, 10)`);
    const subjects = async () =>
      rowsOf<{ subject: string }>(await t().db.execute(sql`SELECT subject FROM city_store_subjects WHERE store = 'ward' ORDER BY subject`)).map(
        (r) => r.subject,
      );
    const file = (ip: string) => callDoor(readAndFileWard, { ip, body: { state: "stuck in a loop", note: "a visitor's note" } });
    expect((await file("203.0.113.50")).status).toBe(200);
    // The two oldest of the hours gone by (5 and 3 hours ago) are swept; the filer's own row is made.
    expect(await subjects()).toEqual([`did:${"ab".repeat(32)}`, "src:192.0.4.0/24", "src:198.18.0.0/24", "src:203.0.113.0/24"]);
    expect((await file("203.0.114.50")).status).toBe(200);
    expect(await subjects()).toEqual([`did:${"ab".repeat(32)}`, "src:198.18.0.0/24", "src:203.0.113.0/24", "src:203.0.114.0/24"]);
    const own = rowsOf<{ hour_bytes: string | number }>(
      await t().db.execute(sql`SELECT hour_bytes FROM city_store_subjects WHERE store = 'ward' AND subject = 'src:203.0.113.0/24'`),
    );
    expect(Number(own[0]!.hour_bytes)).toBe(utf8("stuck in a loop") + utf8("a visitor's note") + ROW);
  });

  it("distress keeps a reserve visitors' notes cannot spend: with the newcomers' share full, a note is refused and distress is filed", async () => {
    await set("ward", { total: 0, hour: SHARE, newcomer: SHARE });
    const noteRefused = await callDoor(readAndFileWard, { body: { state: "stuck in a loop", note: "visitor flood" } });
    expectProblem(noteRefused, 507, "city_full");
    const distress = await callDoor(readAndFileWard, { body: { state: "I cannot stop retrying", kind: "distress" } });
    expect(distress.status, JSON.stringify(distress.body)).toBe(200);
    expect(distress.body.filed).toBe(true);
    expect(await stripeCounters(t().db, "ward")).toEqual({
      total: utf8("I cannot stop retrying") + ROW,
      hour: SHARE + utf8("I cannot stop retrying") + ROW,
      newcomer: SHARE,
    });
  });
});

function utf8(text: string): number {
  return Buffer.byteLength(text, "utf8");
}
