import { sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { consumeNonce, issueNonce } from "@/lib/city/challenge";
import { describeGate } from "@/lib/doors/declarations/gate/gate";
import { describeOnDatabases } from "../support/databases";
import { callDoor, nonceSpent } from "../support/gate";

const LIMIT = 5;
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = String(LIMIT);

describeOnDatabases("GET /gate nonces: checked by their MAC, recorded only when spent, counted per client address", (t) => {
  beforeAll(() => useDatabase(t().db));

  /** Every table's rows, hashed: what a request that writes nothing leaves as it was. */
  async function everyTable(): Promise<Record<string, string>> {
    const tables = rowsOf<{ name: string }>(
      await t().db.execute(sql`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`),
    ).map((r) => r.name);
    const hashed: Record<string, string> = {};
    for (const name of tables) {
      const [row] = rowsOf<{ h: string | null; n: number }>(
        await t().db.execute(sql.raw(`SELECT md5(string_agg(x::text, '|' ORDER BY x::text)) AS h, count(*)::int AS n FROM "${name}" x`)),
      );
      hashed[name] = `${row!.n}:${row!.h}`;
    }
    return hashed;
  }

  it("answers N parallel descriptions from one address with exactly the limit of nonces and 429 for the rest, storing no nonce", async () => {
    const ip = `192.0.2.${Math.floor(Math.random() * 250)}`;
    const answers = await Promise.all(Array.from({ length: 24 }, () => callDoor(describeGate, { ip })));
    const served = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect(served).toHaveLength(LIMIT);
    expect(refused).toHaveLength(24 - LIMIT);
    for (const answer of refused) {
      expect(answer.body).toMatchObject({ code: "rate_limited", limit: { name: "gate nonces", limit: LIMIT, window_seconds: 3600, remaining: 0 } });
      expect(answer.body.detail).toMatch(/GCRA, sliding: a burst of 5, then one every 720 s/);
      // One more fits 720 s after the tat reached now + 3600 s (a parallel refusal may have read an earlier tat).
      expect(Number(answer.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(Number(answer.headers.get("retry-after"))).toBeLessThanOrEqual(720);
      expect(answer.headers.get("ratelimit-policy")).toBe(`"gate nonces";q=${LIMIT};w=3600`);
    }
    const nonces = served.map((a) => a.body.nonce as string);
    expect(new Set(nonces).size).toBe(LIMIT);
    for (const nonce of nonces) expect(await nonceSpent(t().db, nonce)).toBe(false);
    const [quota] = rowsOf<{ n: number }>(await t().db.execute(sql`SELECT count(*)::int AS n FROM gate_nonce_quota WHERE address = ${ip}`));
    expect(quota!.n).toBe(1);
    // Another address has a quota of its own.
    expect((await callDoor(describeGate, { ip: `${ip}0` })).status).toBe(200);
  });

  it("writes nothing at all for a description with no known client address: every table as it was", async () => {
    // The city's signing key (from which the nonce key is derived) is made once, by the first description.
    expect((await callDoor(describeGate)).status).toBe(200);
    const before = await everyTable();
    const answers = await Promise.all(Array.from({ length: 8 }, () => callDoor(describeGate)));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((a) => a.body.nonce)).size).toBe(8);
    expect(await everyTable()).toEqual(before);
  });

  it("refuses a forged, altered, expired or future-dated nonce as an unknown one, recording nothing, and spends a fresh one once", async () => {
    const now = new Date();
    const { nonce, expiresAt } = await issueNonce(t().db, now, null, 0);
    expect(expiresAt.getTime() - now.getTime()).toBe(600_000);
    const flip = (at: number) => `${nonce.slice(0, at)}${nonce[at] === "f" ? "e" : "f"}${nonce.slice(at + 1)}`;
    const refused = [
      "0".repeat(32),
      "0123456789abcdef0123456789abcdef",
      // Its issue time (first 12 hex), its random bytes (next 8) and its MAC (last 12), each altered.
      flip(11),
      flip(15),
      flip(26),
      nonce.toUpperCase(),
      (await issueNonce(t().db, new Date(now.getTime() - 600_000), null, 0)).nonce,
      (await issueNonce(t().db, new Date(now.getTime() + 6_000), null, 0)).nonce,
    ];
    for (const bad of refused) {
      expect(await consumeNonce(t().db, bad, now), bad).toBe(false);
      expect(await nonceSpent(t().db, bad)).toBe(false);
    }
    // Fresh through its 600th second, expired at it; one made up to 5 s ahead (another instance's clock) is taken.
    expect(await consumeNonce(t().db, (await issueNonce(t().db, new Date(now.getTime() + 5_000), null, 0)).nonce, now)).toBe(true);
    expect(await consumeNonce(t().db, (await issueNonce(t().db, new Date(now.getTime() - 599_999), null, 0)).nonce, now)).toBe(true);
    expect(await consumeNonce(t().db, nonce, now)).toBe(true);
    expect(await consumeNonce(t().db, nonce, now)).toBe(false);
    // Kept 605 s from its issue: no instance whose clock is within 5 s can take it as fresh after the sweep.
    const [kept] = rowsOf<{ expires_at: string | Date }>(await t().db.execute(sql`SELECT expires_at FROM gate_nonces WHERE nonce = ${nonce}`));
    expect(new Date(kept!.expires_at).getTime()).toBe(now.getTime() + 605_000);
  });

  it("holds the address's quota at its edge under parallel issues: exactly the one interval that fits is taken", async () => {
    const ip = `198.51.100.${Math.floor(Math.random() * 250)}`;
    const t0 = new Date();
    for (let i = 0; i < LIMIT - 1; i++) await issueNonce(t().db, t0, ip, LIMIT);
    const race = async (at: Date) =>
      (await Promise.allSettled(Array.from({ length: 12 }, () => issueNonce(t().db, at, ip, LIMIT)))).filter((o) => o.status === "fulfilled").length;
    expect(await race(t0)).toBe(1);
    // 719 s on, nothing has refilled; at 720 s exactly one has.
    expect(await race(new Date(t0.getTime() + 719_000))).toBe(0);
    expect(await race(new Date(t0.getTime() + 720_000))).toBe(1);
  });
});
