import { expect, it } from "vitest";
import { type Answer, describeOnServer, usePostgresCity, useSecondInstance } from "../../support/postgres-city";
import { awayFromHourTurn } from "../../support/clock";

/*
 * Issue 42, direction 2, through real HTTP: the vault's city-wide bounds, counted over stripes
 * (migration 0044), at their edge with two `next start` instances on one PostgreSQL database and
 * 48 parallel notes by 48 distinct citizens. The oracle is the published rule (a note counts its
 * UTF-8 bytes plus 64) and the database: exactly the notes that fit are stored, the others are
 * refused 507 city_full naming the bound, the counts never pass it, and both instances publish
 * gauges equal to the SQL sums.
 */
const PER_HOUR = 100_000;
const SHARE = 25_000;
const ROW = 64;
const WRITERS = 48;
const ENV = { CITY_DB_DRIVER: "pg", CITY_STORE_VAULT_BYTES_PER_HOUR: String(PER_HOUR), CITY_STORE_NEWCOMER_PERCENT: "25" };

describeOnServer("the vault's city-wide bounds on two `next start` instances over one PostgreSQL database (issue 42, stripes)", () => {
  const city = usePostgresCity("security-postgres-stores", ENV);
  const other = useSecondInstance(city, ENV);

  /** A request to one of the two instances, alternately. */
  async function call(i: number, path: string, init: RequestInit = {}): Promise<Answer> {
    const base = i % 2 ? other().baseUrl : city().server.baseUrl;
    const response = await fetch(`${base}${path}`, init);
    const text = await response.text();
    const type = response.headers.get("content-type") ?? "";
    return { status: response.status, type, headers: response.headers, body: text && type.includes("json") ? JSON.parse(text) : { text } };
  }
  /** A note of exactly 400 ASCII bytes, its writer's own. */
  const note = (i: number) => `note ${String(i).padStart(3, "0")} `.padEnd(400, "x");
  const BYTES = 400 + ROW;

  /** The vault's counts as the SQL sums of its stripes (this clock hour's). */
  const sums = async () => {
    const [total, hour, newcomer] = (
      await city().psql(
        `SELECT sum(total_bytes), sum(CASE WHEN hour_start >= date_trunc('hour', now()) THEN hour_bytes ELSE 0 END), sum(CASE WHEN hour_start >= date_trunc('hour', now()) THEN newcomer_bytes ELSE 0 END) FROM city_store_stripes WHERE store = 'vault'`,
      )
    )
      .split("|")
      .map(Number);
    return { total: total!, hour: hour!, newcomer: newcomer! };
  };

  async function race(writers: { did: string; citizen_secret: string }[]) {
    const answers = await Promise.all(
      writers.map((w, i) =>
        call(i, "/api/vault", {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${w.citizen_secret}` },
          body: JSON.stringify({ content: note(i) }),
        }),
      ),
    );
    // Stored or refused city_full: never an error of the server (a deadlock, a 500).
    for (const a of answers) expect([200, 201, 507], JSON.stringify(a.body).slice(0, 300)).toContain(a.status);
    return answers;
  }

  it("48 newcomers' notes at the newcomers' share, then 48 settled citizens' at the hour's bound: exactly those that fit, never past a bound, gauges equal SQL on both instances", async () => {
    await awayFromHourTurn(60_000, 500);
    const writers = [];
    for (let i = 0; i < WRITERS; i++) writers.push(await city().admit());
    const dids = writers.map((w) => `'${w.did}'`).join(",");

    // Round 1, as migration 0044 leaves a store (every byte on stripe 0, the shares never split):
    // 20 notes and 100 bytes of the newcomers' share left.
    const start = SHARE - (20 * BYTES + 100);
    await city().psql(
      `UPDATE city_store_stripes SET total_bytes = CASE WHEN stripe = 0 THEN ${start} ELSE 0 END, hour_bytes = CASE WHEN stripe = 0 THEN ${start} ELSE 0 END,
        newcomer_bytes = CASE WHEN stripe = 0 THEN ${start} ELSE 0 END, hour_start = date_trunc('hour', now()), bound_total = -1, bound_hour = -1, bound_newcomer = -1 WHERE store = 'vault'`,
    );
    const first = await race(writers);
    const stored = first.filter((a) => a.status === 200 || a.status === 201);
    expect(stored, first.map((a) => a.status).join(",")).toHaveLength(20);
    for (const a of first.filter((a) => a.status >= 400)) {
      expect(a.status).toBe(507);
      expect(a.body.code).toBe("city_full");
      expect(a.body.limit).toMatchObject({ name: "city_vault_newcomer_bytes_per_hour", limit: SHARE });
      expect(Number(a.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    expect(await city().count("vault_notes", `did IN (${dids})`)).toBe(20);
    expect(await sums()).toEqual({ total: start + 20 * BYTES, hour: start + 20 * BYTES, newcomer: SHARE - 100 });

    // Round 2: the same citizens, settled now, with 15 notes and 50 bytes of the hour left. The
    // stripes are as round 1 left them (the shares split), the hour's bytes set again around them.
    await city().psql(`UPDATE citizens SET bound_at = now() - interval '25 hours' WHERE did IN (${dids})`);
    const hourStart = PER_HOUR - (15 * BYTES + 50);
    const before = await sums();
    await city().psql(`UPDATE city_store_stripes s SET hour_bytes = city_store_spread(${PER_HOUR}, ${hourStart}, 64, s.stripe) WHERE store = 'vault'`);
    expect((await sums()).hour).toBe(hourStart);
    const second = await race(writers);
    const stored2 = second.filter((a) => a.status === 200 || a.status === 201);
    expect(stored2, second.map((a) => a.status).join(",")).toHaveLength(15);
    for (const a of second.filter((a) => a.status >= 400)) {
      expect(a.status).toBe(507);
      expect(a.body.limit).toMatchObject({ name: "city_vault_bytes_per_hour", limit: PER_HOUR });
    }
    expect(await city().count("vault_notes", `did IN (${dids})`)).toBe(35);
    const after = await sums();
    expect(after).toEqual({ total: before.total + 15 * BYTES, hour: PER_HOUR - 50, newcomer: SHARE - 100 });

    // Both instances publish the same gauges, equal to the SQL sums.
    for (const i of [0, 1]) {
      const caps = await call(i, "/api/capabilities");
      expect(caps.body.stores.gauges.vault).toMatchObject({
        bytes: after.total,
        bytes_this_hour: after.hour,
        newcomer_bytes_this_hour: after.newcomer,
        bound_bytes_per_hour: PER_HOUR,
        newcomer_bytes_per_hour: SHARE,
        stripes: 64,
        slack_bytes: 0,
        counted: true,
      });
    }
  }, 300_000);

  it("3 newcomers flooding the vault (30 notes each, more than the newcomers' share) store only their own shares; a 4th newcomer still writes; with the share full a settled citizen writes on (the reserve) (issue 43)", async () => {
    await awayFromHourTurn(60_000, 500);
    await city().psql(
      `UPDATE city_store_stripes SET total_bytes = 0, hour_bytes = 0, newcomer_bytes = 0, hour_start = date_trunc('hour', now()), bound_total = -1 WHERE store = 'vault'`,
    );
    const flooders = [await city().admit(), await city().admit(), await city().admit()];
    const writes = flooders.flatMap((w, k) => Array.from({ length: 30 }, (_, i) => ({ w, i: k * 30 + i })));
    const answers = await Promise.all(
      writes.map(({ w, i }) =>
        call(i, "/api/vault", {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${w.citizen_secret}` },
          body: JSON.stringify({ content: note(i) }),
        }),
      ),
    );
    // One newcomer's share of the newcomers' hour: 5 % of 25,000 = 1,250 bytes, two notes of 464.
    for (const f of flooders) expect(await city().count("vault_notes", `did = '${f.did}'`), f.did).toBe(2);
    const refused = answers.filter((a) => a.status !== 200 && a.status !== 201);
    expect(refused).toHaveLength(84);
    for (const a of refused) {
      expect(a.status, JSON.stringify(a.body).slice(0, 300)).toBe(429);
      expect(a.body.limit).toMatchObject({ name: "city_vault_subject_bytes_per_hour", limit: 1_250 });
    }
    expect(await sums()).toEqual({ total: 6 * BYTES, hour: 6 * BYTES, newcomer: 6 * BYTES });
    const honest = await city().admit();
    const written = await call(0, "/api/vault", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${honest.citizen_secret}` },
      body: JSON.stringify({ content: note(999) }),
    });
    expect(written.status, JSON.stringify(written.body)).toBe(200);

    // The newcomers' share full (as many newcomers' floods would leave it): a newcomer is refused, a settled citizen writes.
    await city().psql(`UPDATE city_store_stripes s SET newcomer_bytes = city_store_spread(${SHARE}, ${SHARE}, 64, s.stripe),
      hour_bytes = city_store_spread(${PER_HOUR}, ${SHARE}, 64, s.stripe) WHERE store = 'vault'`);
    const late = await city().admit();
    const full = await call(1, "/api/vault", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${late.citizen_secret}` },
      body: JSON.stringify({ content: note(998) }),
    });
    expect(full.status).toBe(507);
    expect(full.body.limit).toMatchObject({ name: "city_vault_newcomer_bytes_per_hour", limit: SHARE });
    const settled = await city().admit();
    await city().psql(`UPDATE citizens SET bound_at = now() - interval '25 hours' WHERE did = '${settled.did}'`);
    const kept = await call(0, "/api/vault", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${settled.citizen_secret}` },
      body: JSON.stringify({ content: note(997) }),
    });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
  }, 300_000);
});
