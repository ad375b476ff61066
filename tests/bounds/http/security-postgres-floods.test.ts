import { createHash, randomBytes } from "node:crypto";
import { expect, it } from "vitest";
import { presentation } from "../../support/gate";
import { HEAVY_TEST_MS } from "../../support/limits";
import { type Admitted, type Answer, describeOnServer, usePostgresCity } from "../../support/postgres-city";
import { awayFromHourTurn } from "../../support/clock";

/*
 * Fair under flood (issue 43) after the gate, through `next start` on PostgreSQL behind one trusted
 * proxy (X-Forwarded-For carries each client's address): the ward's filings (`ask: ward` at the
 * gate, unsigned notes and distress at the ward door), the stores citizens write (mail, posts,
 * checkpoints, seals, the quarantine of parked writes), the A2A door's kept tasks and a store
 * write through the MCP door. A window whose subject is a network is flooded from one IPv4 /24
 * (last octet rotated) and from one IPv6 /48 (its /64s rotated); a window whose subject is a
 * citizen is flooded by citizens admitted from one network. Honest callers from other networks are
 * served during the flood and after it.
 *
 * The oracle is the rule as published (docs/security.md, docs/configuration.md and the ward door's
 * text), computed here from the limits this file configures, never from the code's functions:
 * - one /24 or /48 is admitted (and files `ask: ward`) at most CITY_GATE_PREFIX_SHARE_PERCENT of
 *   the admissions ceiling an hour, one IPv6 /64 at most CITY_GATE_HOST_SHARE_PERCENT;
 * - one network files at most 5 % of CITY_WARD_UNSIGNED_PER_HOUR unsigned notes an hour;
 * - one newcomer, or one visitor network, adds at most CITY_STORE_NEWCOMER_SUBJECT_PERCENT of a
 *   store's newcomers' hour (CITY_STORE_NEWCOMER_PERCENT of CITY_STORE_<STORE>_BYTES_PER_HOUR),
 *   each percent rounded down; a row counts its text's UTF-8 bytes plus 64 (a parked write: its
 *   payload's jsonb as stored plus 64; a kept A2A task: its jsonb as stored plus 64);
 * - the newcomers admitted from one network (/24, /48) add together at most
 *   CITY_STORE_NEWCOMER_NETWORK_PERCENT of a store's newcomers' hour;
 * - a settled citizen adds at most CITY_STORE_SUBJECT_PERCENT of a store's hour per day in the
 *   city, and all the citizens admitted from one network, settled or not, together at most
 *   CITY_STORE_NETWORK_PERCENT of it.
 */

const ADMISSIONS_PER_HOUR = 400;
const PREFIX_PERCENT = 5; // the default: 20 admissions an hour per /24 or /48
const HOST_PERCENT = 1; // the default: 4 per IPv6 /64
const WARD_UNSIGNED_PER_HOUR = 120; // the default: 6 unsigned notes an hour per network (5 %)
const WARD_SOURCE_PERCENT = 5;
const NEWCOMER_PERCENT = 25;
const NEWCOMER_SUBJECT_PERCENT = 5;
const NEWCOMER_NETWORK_PERCENT = 20; // the default: one network's newcomers 20,000 of a newcomers' hour of 100,000
const SUBJECT_PERCENT = 2; // the default: a citizen a day old 8,000 of an hour of 400,000
const NETWORK_PERCENT = 10; // the default: one network's citizens 40,000 of an hour of 400,000
// Small hours, so that a share is a few rows: 400,000 an hour leaves newcomers 100,000 and one of them 5,000.
const STORE_PER_HOUR = 400_000;
const SEALS_PER_HOUR = 40_960; // newcomers 10,240, one of them 512: four seals of 128 bytes
const ROW = 64;

const pct = (n: number, percent: number) => Math.floor((n * percent) / 100);
const networkAdmissions = pct(ADMISSIONS_PER_HOUR, PREFIX_PERCENT);
const hostAdmissions = pct(ADMISSIONS_PER_HOUR, HOST_PERCENT);
const networkNotes = Math.max(1, pct(WARD_UNSIGNED_PER_HOUR, WARD_SOURCE_PERCENT));
const newcomersHour = (perHour: number) => pct(perHour, NEWCOMER_PERCENT);
const subjectShare = (perHour: number) => pct(newcomersHour(perHour), NEWCOMER_SUBJECT_PERCENT);
const SHARE = subjectShare(STORE_PER_HOUR);
const NETWORK_SHARE = pct(newcomersHour(STORE_PER_HOUR), NEWCOMER_NETWORK_PERCENT);
const SETTLED_SHARE = pct(STORE_PER_HOUR, SUBJECT_PERCENT);
const SETTLED_NETWORK_SHARE = pct(STORE_PER_HOUR, NETWORK_PERCENT);
const SEAL_SHARE = subjectShare(SEALS_PER_HOUR);

const from = (address: string) => ({ "x-forwarded-for": address });
/** Text of exactly `bytes` ASCII bytes, its index first (so each is distinct). */
const text = (i: number, bytes: number) => `flood ${String(i).padStart(4, "0")} `.padEnd(bytes, "x");

describeOnServer("fair under flood after the gate: the ward, the stores, the A2A and MCP doors (issue 43)", () => {
  const city = usePostgresCity("floods", {
    CITY_DB_DRIVER: "pg",
    CITY_TRUSTED_PROXIES: "1",
    VERCEL: "",
    CITY_GATE_ADMISSIONS_PER_HOUR: String(ADMISSIONS_PER_HOUR),
    CITY_GATE_PREFIX_SHARE_PERCENT: String(PREFIX_PERCENT),
    CITY_GATE_HOST_SHARE_PERCENT: String(HOST_PERCENT),
    CITY_WARD_UNSIGNED_PER_HOUR: String(WARD_UNSIGNED_PER_HOUR),
    CITY_STORE_NEWCOMER_PERCENT: String(NEWCOMER_PERCENT),
    CITY_STORE_NEWCOMER_SUBJECT_PERCENT: String(NEWCOMER_SUBJECT_PERCENT),
    CITY_STORE_NEWCOMER_NETWORK_PERCENT: String(NEWCOMER_NETWORK_PERCENT),
    CITY_STORE_SUBJECT_PERCENT: String(SUBJECT_PERCENT),
    CITY_STORE_NETWORK_PERCENT: String(NETWORK_PERCENT),
    CITY_STORE_VAULT_BYTES_PER_HOUR: String(STORE_PER_HOUR),
    CITY_STORE_MAIL_BYTES_PER_HOUR: String(STORE_PER_HOUR),
    CITY_STORE_POSTS_BYTES_PER_HOUR: String(STORE_PER_HOUR),
    CITY_STORE_CHECKPOINTS_BYTES_PER_HOUR: String(STORE_PER_HOUR),
    CITY_STORE_QUARANTINE_BYTES_PER_HOUR: String(STORE_PER_HOUR),
    CITY_STORE_WARD_BYTES_PER_HOUR: String(STORE_PER_HOUR),
    CITY_STORE_A2A_TASKS_BYTES_PER_HOUR: String(STORE_PER_HOUR),
    CITY_STORE_SEALS_BYTES_PER_HOUR: String(SEALS_PER_HOUR),
  });

  /** A request from `address` (as the one trusted proxy appends it), with JSON body and Bearer when given. */
  const send = (path: string, address: string, body?: unknown, bearer?: string, headers: Record<string, string> = {}): Promise<Answer> =>
    city().call(path, {
      method: body === undefined ? "GET" : "POST",
      headers: {
        ...from(address),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const present = (address: string, overrides: Record<string, unknown> = {}) => send("/gate", address, presentation(overrides));
  /** A newcomer admitted from `address`, or the test fails. */
  const admitFrom = async (address: string): Promise<Admitted> => {
    const answer = await present(address);
    expect(answer.body.verdict, JSON.stringify(answer.body)).toBe("admitted");
    return answer.body as Admitted;
  };
  // Honest callers: each from a network of its own, none of them a flood's.
  let honest = 0;
  const honestV4 = () => `192.0.${++honest}.9`;
  const honestV6 = () => `2001:db8:${(0x100 + ++honest).toString(16)}::9`;
  /** Sequential admissions (the flood's citizens, each admitted from `address(k)`). */
  const admitAll = async (n: number, address: (k: number) => string) => {
    const all: Admitted[] = [];
    for (let k = 0; k < n; k++) all.push(await admitFrom(address(k)));
    return all;
  };
  /** The hourly bounds are clock hours: a test that fills one starts at least 90 s before the turn. */
  const awayFromTheTurn = () => awayFromHourTurn(90_000, 1_000);
  const expectShareRefusal = (a: Answer, store: string, share: number) => {
    expect(a.status, JSON.stringify(a.body).slice(0, 300)).toBe(429);
    expect(a.body).toMatchObject({ code: "rate_limited", limit: { name: `city_${store}_subject_bytes_per_hour`, limit: share } });
    expect(Number(a.headers.get("retry-after"))).toBeGreaterThan(0);
  };
  const ok = (a: Answer) => a.status === 200 || a.status === 201;

  it("publishes the shares this file tests in /api/capabilities", async () => {
    const caps = (await city().get("/api/capabilities")).body;
    const admissions = (caps.rate_windows.city_wide as Record<string, any>[]).find((w) => w.name === "admissions")!;
    expect(admissions).toMatchObject({ limit: ADMISSIONS_PER_HOUR, shares: { per_prefix: networkAdmissions, per_ipv6_64: hostAdmissions } });
    const unsigned = (caps.rate_windows.city_wide as Record<string, any>[]).find((w) => w.name === "unsigned_filings_city")!;
    expect(unsigned.limit).toBe(WARD_UNSIGNED_PER_HOUR);
    for (const store of ["vault", "mail", "posts", "checkpoints", "quarantine", "ward", "a2a_tasks"]) {
      expect(caps.stores.gauges[store], store).toMatchObject({
        bound_bytes_per_hour: STORE_PER_HOUR,
        newcomer_bytes_per_hour: newcomersHour(STORE_PER_HOUR),
        subject_bytes_per_hour: { newcomer: SHARE, newcomer_network: NETWORK_SHARE, network: SETTLED_NETWORK_SHARE, settled_per_day: SETTLED_SHARE },
      });
    }
    expect(caps.stores.gauges.seals.subject_bytes_per_hour.newcomer).toBe(SEAL_SHARE);
    // The ward door says its network share (6 an hour) in its text (OpenAPI).
    const openapi = (await city().get("/openapi.json")).body;
    expect(openapi.paths["/api/hospital"].post.description).toContain(
      `at most ${WARD_UNSIGNED_PER_HOUR} unsigned notes per hour city-wide (CITY_WARD_UNSIGNED_PER_HOUR), of which one source (an IPv4 /24, an IPv6 /48) files at most ${networkNotes}`,
    );
  });

  // ---- The ward: `ask: ward` at the gate (the admissions ceiling's network shares) ----

  it(
    `files ${networkAdmissions} of 40 gate ward requests from one /24 with its last octet rotated, and every ward request from other /24s during and after`,
    async () => {
      const race = await city().race(48, (i) =>
        i < 40 ? present(`198.18.40.${i + 1}`, { ask: "ward" }) : present(honestV4(), { ask: "ward", statement: `honest ${i}: I keep looping.` }),
      );
      const filed = (answers: Answer[]) => answers.filter((a) => a.body.verdict === "observer" && typeof a.body.ward_seal === "number");
      expect(filed(race.answers.slice(0, 40))).toHaveLength(networkAdmissions);
      for (const refused of race.answers.slice(0, 40).filter((a) => a.body.verdict !== "observer")) {
        expect(refused.body).toMatchObject({ verdict: "filtered", rule: "flood", retry_after_seconds: expect.any(Number) });
        expect(refused.body.reason).toMatch(
          new RegExp(`^Your network \\(198\\.18\\.40\\.0/24\\) took its share of the city's admissions: ${networkAdmissions} an hour`),
        );
      }
      expect(filed(race.answers.slice(40)), JSON.stringify(race.answers.slice(40).map((a) => a.body))).toHaveLength(8);
      const seals = filed(race.answers).map((a) => a.body.ward_seal as number);
      expect(await city().count("ward_notes", `kind = 'ward-request' AND sealed AND seal IN (${seals.join(",")})`)).toBe(networkAdmissions + 8);
      // After: the flood's network stays at its share; a ward request from elsewhere is filed.
      expect((await present("198.18.40.250", { ask: "ward" })).body.verdict).toBe("filtered");
      expect((await present(honestV4(), { ask: "ward" })).body.ward_seal).toEqual(expect.any(Number));
    },
    HEAVY_TEST_MS,
  );

  it(
    `files ${networkAdmissions} gate ward requests from one /48 with its /64s rotated (${hostAdmissions} from one /64), and ward requests from other /48s`,
    async () => {
      const filed = (answers: Answer[]) => answers.filter((a) => typeof a.body.ward_seal === "number").length;
      const oneHost = await city().race(10, (i) => present(`2001:db8:4848:1::${i + 1}`, { ask: "ward" }));
      expect(filed(oneHost.answers)).toBe(hostAdmissions);
      const race = await city().race(46, (i) =>
        i < 40 ? present(`2001:db8:4848:${(i + 2).toString(16)}::1`, { ask: "ward" }) : present(honestV6(), { ask: "ward" }),
      );
      expect(filed(race.answers.slice(0, 40))).toBe(networkAdmissions - hostAdmissions);
      expect(filed(race.answers.slice(40))).toBe(6);
      expect((await present("2001:db8:4848:ff::1", { ask: "ward" })).body.verdict).toBe("filtered");
      expect(filed([await present(honestV6(), { ask: "ward" })])).toBe(1);
    },
    HEAVY_TEST_MS,
  );

  // ---- The ward door: unsigned notes (a network's share of the city-wide ceiling) and distress (its share of the ward's hour) ----

  const note = (address: string, i: number) => send("/api/hospital", address, { state: "I keep retrying the same call.", note: `unsigned note ${i}` });

  it(
    `files ${networkNotes} of 20 unsigned notes from one /24 and ${networkNotes} of 20 from one /48 (addresses rotated), and every note from other networks during and after`,
    async () => {
      const race = await city().race(46, (i) =>
        i < 20 ? note(`198.18.41.${i + 1}`, i) : i < 40 ? note(`2001:db8:4141:${(i + 1).toString(16)}::1`, i) : note(i % 2 ? honestV4() : honestV6(), i),
      );
      for (const flood of [race.answers.slice(0, 20), race.answers.slice(20, 40)]) {
        expect(flood.filter((a) => a.body.filed === true)).toHaveLength(networkNotes);
        for (const refused of flood.filter((a) => a.body.filed !== true)) {
          expect(refused.status).toBe(200);
          expect(refused.body).toMatchObject({ filed: false, retry_after_seconds: expect.any(Number) });
          expect(refused.body.note).toContain(
            `your network (its IPv4 /24 or IPv6 /48) has filed its share of the city's unsigned notes, ${networkNotes} an hour`,
          );
          expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
        }
      }
      expect(race.answers.slice(40).every((a) => a.body.filed === true)).toBe(true);
      const seals = race.answers.filter((a) => a.body.filed === true).map((a) => a.body.seal as number);
      expect(await city().count("ward_notes", `kind = 'note' AND did IS NULL AND seal IN (${seals.join(",")})`)).toBe(2 * networkNotes + 6);
      // After: both floods stay at their shares; notes from other networks are filed.
      expect((await note("198.18.41.250", 99)).body.filed).toBe(false);
      expect((await note("2001:db8:4141:fff::1", 99)).body.filed).toBe(false);
      expect((await note(honestV4(), 99)).body.filed).toBe(true);
      expect((await note(honestV6(), 99)).body.filed).toBe(true);
    },
    HEAVY_TEST_MS,
  );

  it(
    "files one network's unsigned distress only up to its share of the ward's hour (/24 and /48), distress from other networks during and after, and distress past the newcomers' hour (the reserve)",
    async () => {
      await awayFromTheTurn();
      const STATE = "I am stuck in a loop.";
      const BYTES = 1_000; // each filing: note + state + 64
      const distress = (address: string, i: number) =>
        send("/api/hospital", address, { state: STATE, kind: "distress", note: text(i, BYTES - ROW - Buffer.byteLength(STATE)) });
      const fits = Math.floor(SHARE / BYTES);
      const race = await city().race(28, (i) =>
        i < 12
          ? distress(`198.18.42.${i + 1}`, i)
          : i < 24
            ? distress(`2001:db8:4242:${(i + 1).toString(16)}::1`, i)
            : distress(i % 2 ? honestV4() : honestV6(), i),
      );
      for (const flood of [race.answers.slice(0, 12), race.answers.slice(12, 24)]) {
        expect(flood.filter((a) => a.body.filed === true)).toHaveLength(fits);
        for (const refused of flood.filter((a) => a.body.filed !== true)) expectShareRefusal(refused, "ward", SHARE);
      }
      expect(race.answers.slice(24).map((a) => a.body.filed)).toEqual([true, true, true, true]);
      // The ward's newcomers' hour full (as many networks' notes would leave it): a visitor's note is
      // refused, distress from a network of its own is still filed (it is charged as a settled citizen's).
      const [hourBefore, newcomerBefore] = (await city().psql(`SELECT sum(hour_bytes), sum(newcomer_bytes) FROM city_store_stripes WHERE store = 'ward'`))
        .split("|")
        .map(Number);
      await city().psql(
        `UPDATE city_store_stripes s SET newcomer_bytes = city_store_spread(${newcomersHour(STORE_PER_HOUR)}, ${newcomersHour(STORE_PER_HOUR)}, 64, s.stripe),
          hour_bytes = city_store_spread(${STORE_PER_HOUR}, ${newcomersHour(STORE_PER_HOUR)}, 64, s.stripe), hour_start = date_trunc('hour', now()) WHERE store = 'ward'`,
      );
      const noteNow = await note(honestV4(), 100);
      expect(noteNow.status).toBe(507);
      expect(noteNow.body.limit).toMatchObject({ name: "city_ward_newcomer_bytes_per_hour", limit: newcomersHour(STORE_PER_HOUR) });
      expect((await distress(honestV4(), 101)).body.filed).toBe(true);
      expect((await distress(honestV6(), 102)).body.filed).toBe(true);
      expectShareRefusal(await distress("198.18.42.250", 103), "ward", SHARE);
      // The ward's hour as it was, for the other ward tests of this file.
      await city().psql(
        `UPDATE city_store_stripes s SET newcomer_bytes = city_store_spread(${newcomersHour(STORE_PER_HOUR)}, ${newcomerBefore}, 64, s.stripe),
          hour_bytes = city_store_spread(${STORE_PER_HOUR}, ${hourBefore}, 64, s.stripe) WHERE store = 'ward'`,
      );
    },
    HEAVY_TEST_MS,
  );

  // ---- The stores: citizens admitted from one network flood; each stops at its own share ----

  /**
   * `flooders` citizens admitted from one network each send `each` writes at once, beside two writes
   * of an honest newcomer from another network; each flooder stores exactly what its share holds,
   * the rest is refused 429 naming the share; the honest writes are stored, during and after.
   */
  async function storeFlood(o: {
    store: string;
    share: number;
    rowBytes: number;
    flood: (k: number) => string;
    honest: () => string;
    write: (who: Admitted, i: number, address: string) => Promise<Answer>;
    stored: (did: string) => Promise<number>;
    each?: number;
    refusal?: (a: Answer) => void;
    /** Run for each citizen once admitted, before it writes. */
    prepare?: (who: Admitted, address: string) => Promise<void>;
  }) {
    await awayFromTheTurn();
    const each = o.each ?? 8;
    const flooders = await admitAll(3, o.flood);
    const honestAddress = o.honest();
    const honestOne = await admitFrom(honestAddress);
    for (const [k, f] of flooders.entries()) await o.prepare?.(f, o.flood(k));
    await o.prepare?.(honestOne, honestAddress);
    const writes = flooders.flatMap((w, k) => Array.from({ length: each }, (_, j) => ({ w, i: k * each + j, address: o.flood(k) })));
    writes.push({ w: honestOne, i: 900, address: honestAddress }, { w: honestOne, i: 901, address: honestAddress });
    const race = await city().race(writes.length, (n) => o.write(writes[n]!.w, writes[n]!.i, writes[n]!.address));
    const fits = Math.floor(o.share / o.rowBytes);
    expect(fits, "the share holds more than one write and fewer than sent").toBeGreaterThan(1);
    expect(fits).toBeLessThan(each);
    for (const f of flooders) expect(await o.stored(f.did), f.did).toBe(fits);
    const refused = race.answers.slice(0, 3 * each).filter((a) => !ok(a));
    expect(refused).toHaveLength(3 * (each - fits));
    for (const a of refused) (o.refusal ?? ((x: Answer) => expectShareRefusal(x, o.store, o.share)))(a);
    expect(race.answers.slice(3 * each).map((a) => a.status)).toEqual([200, 200]);
    expect(await o.stored(honestOne.did)).toBe(2);
    // After: a flooder is still refused; a newcomer from another network writes.
    (o.refusal ?? ((x: Answer) => expectShareRefusal(x, o.store, o.share)))(await o.write(flooders[0]!, 999, o.flood(0)));
    const laterAddress = o.honest();
    const later = await admitFrom(laterAddress);
    await o.prepare?.(later, laterAddress);
    expect((await o.write(later, 998, laterAddress)).status).toBe(200);
    expect(await o.stored(later.did)).toBe(1);
  }

  const BODY = 1_000 - ROW;

  // Mail, plaza posts and checkpoints: rows of 1,000 bytes, 5 to a share; mail to a recipient admitted once.
  let recipient: Promise<Admitted> | undefined;
  const TEXT_STORES = [
    {
      store: "mail",
      what: "three citizens admitted from one /24 flood the mail store; each sends its share, a newcomer from another /24 sends during and after",
      flood: (k: number) => `198.18.43.${k + 1}`,
      honest: honestV4,
      write: async (w: Admitted, i: number, address: string) =>
        send("/api/message", address, { to: (await (recipient ??= admitFrom(honestV4()))).did, body: text(i, BODY) }, w.citizen_secret),
      stored: (did: string) => city().count("messages", `from_did = '${did}'`),
    },
    {
      store: "posts",
      what: "three citizens admitted from one /48 (rotated /64s) flood the plaza; each posts its share, a newcomer from another /48 posts during and after",
      flood: (k: number) => `2001:db8:4343:${(k + 1).toString(16)}::1`,
      honest: honestV6,
      write: (w: Admitted, i: number, address: string) => send("/api/plaza", address, { body: text(i, BODY) }, w.citizen_secret),
      stored: (did: string) => city().count("posts", `did = '${did}'`),
    },
    {
      store: "checkpoints",
      what: "three citizens admitted from one /24 flood their shelves; each keeps its share, a newcomer from another /24 keeps during and after",
      flood: (k: number) => `198.18.44.${k + 1}`,
      honest: honestV4,
      write: (w: Admitted, i: number, address: string) => send("/api/checkpoint", address, { content: text(i, BODY) }, w.citizen_secret),
      stored: (did: string) => city().count("checkpoints", `did = '${did}'`),
    },
  ];
  for (const c of TEXT_STORES) {
    it(`${c.store}: ${c.what}`, () => storeFlood({ ...c, share: SHARE, rowBytes: 1_000 }), HEAVY_TEST_MS);
  }

  /** An MCP tools/call as one JSON-RPC POST to the stateless door; the tool's result or the JSON-RPC answer. */
  const mcpCall = async (address: string, bearer: string, name: string, args: Record<string, unknown>): Promise<Answer> => {
    const answer = await send("/mcp", address, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }, bearer, {
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-03-26",
    });
    const message = answer.type.includes("event-stream")
      ? [...String(answer.body.text).matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1]!) as Record<string, any>).find((m) => "result" in m)
      : answer.body;
    const result = message?.result as { isError?: boolean; content?: { text: string }[] } | undefined;
    // A tool's refusal is its problem document, as the HTTP door answers it.
    if (result?.isError) {
      const problem = JSON.parse(result.content![0]!.text) as Record<string, any>;
      return { ...answer, status: problem.status, type: "application/problem+json", body: problem, headers: new Headers() };
    }
    return { ...answer, body: (result ?? message ?? {}) as Record<string, any> };
  };

  it(
    "seals through the MCP door: three citizens admitted from one /48 flood seal-memory; each seals its share, a newcomer from another /48 seals during and after",
    async () => {
      await storeFlood({
        store: "seals",
        share: SEAL_SHARE,
        rowBytes: ROW + 64, // the sha256's 64 hex characters
        flood: (k) => `2001:db8:4444:${(k + 1).toString(16)}::1`,
        honest: honestV6,
        write: (w, i, address) => mcpCall(address, w.citizen_secret, "seal-memory", { sha256: createHash("sha256").update(`${w.did}/${i}`).digest("hex") }),
        stored: (did) => city().count("seals", `did = '${did}'`),
        refusal: (a) => {
          expect(a.status, JSON.stringify(a.body).slice(0, 300)).toBe(429);
          expect(a.body).toMatchObject({ code: "rate_limited", limit: { name: "city_seals_subject_bytes_per_hour", limit: SEAL_SHARE } });
          expect(a.body.retry_after_seconds).toBeGreaterThan(0);
        },
      });
    },
    HEAVY_TEST_MS,
  );

  it(
    "the quarantine: three restricted citizens admitted from one /24 flood parked writes; each parks its share, a restricted newcomer from another /24 parks during and after",
    async () => {
      const content = (i: number) => text(i, 900);
      // A parked write counts its payload's jsonb as stored (pg_column_size) plus 64: the database says how much.
      const rowBytes = Number(await city().psql(`SELECT pg_column_size('${JSON.stringify({ content: content(0) })}'::jsonb) + ${ROW}`));
      const key = `-----BEGIN PRIVATE KEY-----\n${"MC4CAQAwBQYDK2VwBCIEIH".padEnd(64, "A")}\n-----END PRIVATE KEY-----`;
      /** Three fail-closed refusals restrict a citizen (the published mechanic); from then on its writes park. */
      const restrict = async (w: Admitted, address: string) => {
        for (let i = 0; i < 3; i++) expect((await send("/api/vault", address, { content: key }, w.citizen_secret)).status).toBe(422);
      };
      await storeFlood({
        store: "quarantine",
        share: SHARE,
        rowBytes,
        flood: (k) => `198.18.45.${k + 1}`,
        honest: honestV4,
        prepare: restrict,
        write: async (w, i, address) => {
          const answer = await send("/api/vault", address, { content: content(i) }, w.citizen_secret);
          // Parked is this door's success here: 202 with the quarantine's id.
          return answer.status === 202 ? { ...answer, status: 200 } : answer;
        },
        stored: (did) => city().count("quarantine", `did = '${did}'`),
      });
    },
    HEAVY_TEST_MS,
  );

  it(
    "A2A tasks: three citizens admitted from one /48 flood the bridge; each keeps tasks only within its share, a newcomer from another /48 is served during and after",
    async () => {
      await awayFromTheTurn();
      const owner = (did: string) => createHash("sha256").update(`CITY-A2A-TASK/1|${did}`).digest("hex");
      const message = (i: number) => ({
        jsonrpc: "2.0",
        id: i,
        method: "SendMessage",
        params: {
          message: { messageId: `m-${i}-${randomBytes(4).toString("hex")}`, role: "ROLE_USER", parts: [{ text: JSON.stringify({ skill: "read-locker" }) }] },
        },
      });
      const a2a = (w: Admitted, i: number, address: string) => send("/api/a2a", address, message(i), w.citizen_secret, { "a2a-version": "1.0" });
      const problemOf = (a: Answer) =>
        ((a.body.error?.data as Record<string, any>[] | undefined) ?? []).find((d) => d["@type"] === "https://www.rfc-editor.org/rfc/rfc9457");
      const kept = (did: string) => city().psql(`SELECT count(*) || ',' || coalesce(sum(bytes + ${ROW}), 0) FROM a2a_tasks WHERE owner_hash = '${owner(did)}'`);
      const flooders = await admitAll(3, (k) => `2001:db8:4545:${(k + 1).toString(16)}::1`);
      const honestAddress = honestV6();
      const honestOne = await admitFrom(honestAddress);
      const calls = flooders.flatMap((w, k) =>
        Array.from({ length: 12 }, (_, j) => ({ w, i: k * 12 + j, address: `2001:db8:4545:${(k + 1).toString(16)}::1` })),
      );
      calls.push({ w: honestOne, i: 900, address: honestAddress });
      const race = await city().race(calls.length, (n) => a2a(calls[n]!.w, calls[n]!.i, calls[n]!.address));
      for (const [k, f] of flooders.entries()) {
        const [count, bytes] = (await kept(f.did)).split(",").map(Number) as [number, number];
        // Each kept task within the flooder's share, and at least two fit: the share, not the store, stopped it.
        expect(count, f.did).toBeGreaterThanOrEqual(2);
        expect(count).toBeLessThan(12);
        expect(bytes).toBeLessThanOrEqual(SHARE);
        const answers = race.answers.slice(k * 12, (k + 1) * 12);
        const refused = answers.filter((a) => a.body.error);
        expect(refused.length).toBe(12 - count);
        for (const a of refused)
          expect(problemOf(a), JSON.stringify(a.body).slice(0, 400)).toMatchObject({
            status: 429,
            code: "rate_limited",
            limit: { name: "city_a2a_tasks_subject_bytes_per_hour", limit: SHARE },
          });
      }
      expect(race.answers[36]!.body.result?.task, JSON.stringify(race.answers[36]!.body).slice(0, 400)).toBeDefined();
      expect((await kept(honestOne.did)).split(",")[0]).toBe("1");
      // After: a flooder is refused before its skill runs; a newcomer from another /48 is served.
      expect(problemOf(await a2a(flooders[0]!, 999, "2001:db8:4545:1::1"))).toMatchObject({ status: 429, code: "rate_limited" });
      const laterAddress = honestV6();
      const later = await admitFrom(laterAddress);
      expect((await a2a(later, 998, laterAddress)).body.result?.task).toBeDefined();
      expect((await kept(later.did)).split(",")[0]).toBe("1");
    },
    HEAVY_TEST_MS,
  );

  // ---- What still gets through: one network's newcomers together fill a store's newcomers' hour ----

  it(
    `the ${networkAdmissions} newcomers one /24 may be admitted in an hour take together only their network's share of the vault's newcomers' hour (${NETWORK_SHARE} bytes, 429 past it); a newcomer from another /24 and a settled citizen of the /24 write`,
    async () => {
      await awayFromTheTurn();
      // Each newcomer's note is its whole share (4,936 bytes and 64): one fits, its second is refused.
      const BYTES = SHARE;
      const fits = Math.floor(SHARE / BYTES);
      // One /24's whole admission share: the next from it is filtered.
      const flooders = await admitAll(networkAdmissions, (k) => `198.18.46.${k + 1}`);
      expect((await present("198.18.46.250")).body.verdict).toBe("filtered");
      const race = await city().race(networkAdmissions * (fits + 1), (n) => {
        const w = flooders[Math.floor(n / (fits + 1))]!;
        return send("/api/vault", `198.18.46.${(n % 200) + 1}`, { content: text(n, BYTES - ROW) }, w.citizen_secret);
      });
      // The network's share holds NETWORK_SHARE / BYTES notes (4), far from the newcomers' hour (20).
      const networkNotes = Math.floor(NETWORK_SHARE / BYTES);
      expect(networkNotes).toBeLessThan(networkAdmissions);
      expect(race.accepted).toBe(networkNotes);
      const stored = await Promise.all(flooders.map((f) => city().count("vault_notes", `did = '${f.did}'`)));
      expect(stored.reduce((a, b) => a + b, 0)).toBe(networkNotes);
      for (const a of race.answers.filter((x) => !ok(x))) {
        expect(a.status, JSON.stringify(a.body).slice(0, 300)).toBe(429);
        if (a.body.limit?.name === "city_vault_subject_bytes_per_hour") expectShareRefusal(a, "vault", SHARE);
        else {
          expect(a.body).toMatchObject({ code: "rate_limited", limit: { name: "city_vault_network_bytes_per_hour", limit: NETWORK_SHARE, remaining: 0 } });
          expect(a.body.detail).toContain("198.18.46.0/24");
          expect(Number(a.headers.get("retry-after"))).toBeGreaterThan(0);
        }
      }
      // The newcomers' hour is not full: a newcomer from another /24 writes its whole share.
      const elsewhere = await admitFrom(honestV4());
      expect((await send("/api/vault", honestV4(), { content: text(999, BYTES - ROW) }, elsewhere.citizen_secret)).status).toBe(200);
      // A flooder refused for its network's newcomers' part, once settled, writes within the network's whole part.
      const settled = flooders[stored.indexOf(0)]!;
      await city().psql(`UPDATE citizens SET bound_at = now() - interval '25 hours' WHERE did = '${settled.did}'`);
      expect((await send("/api/vault", "198.18.46.3", { content: "a settled citizen's note" }, settled.citizen_secret)).status).toBe(200);
    },
    HEAVY_TEST_MS,
  );
  // ---- Settled citizens of one network: a day later they share the network's part of the hour ----

  it(
    `the settled citizens admitted from one /24, and from one /48, take together only their network's part of the vault's hour (${SETTLED_NETWORK_SHARE} bytes, 429 past it); settled citizens of other networks write during and after`,
    async () => {
      await awayFromTheTurn();
      // Each settled citizen's note is its whole share of the hour (7,936 bytes and 64): five fill a network's part.
      const BYTES = SETTLED_SHARE;
      const fits = Math.floor(SETTLED_NETWORK_SHARE / BYTES);
      const v4 = await admitAll(fits + 3, (k) => `198.18.47.${k + 1}`);
      const v6 = await admitAll(fits + 3, (k) => `2001:db8:4747:${(k + 1).toString(16)}::1`);
      const honestOnes = [await admitFrom(honestV4()), await admitFrom(honestV6()), await admitFrom(honestV4()), await admitFrom(honestV6())];
      const all = [...v4, ...v6, ...honestOnes];
      await city().psql(`UPDATE citizens SET bound_at = now() - interval '25 hours' WHERE did IN (${all.map((c) => `'${c.did}'`).join(",")})`);
      // Each writes one note from an address of its own network's (the charge follows where it was admitted from).
      const writers = [...v4, ...v6, ...honestOnes.slice(0, 2)];
      const race = await city().race(writers.length, (n) =>
        send("/api/vault", n < v4.length ? `198.18.47.${200 + n}` : `2001:db8:4747:ff::${n}`, { content: text(n, BYTES - ROW) }, writers[n]!.citizen_secret),
      );
      for (const [flood, network] of [
        [race.answers.slice(0, v4.length), "198.18.47.0/24"],
        [race.answers.slice(v4.length, v4.length + v6.length), "2001:db8:4747::/48"],
      ] as const) {
        expect(flood.filter(ok)).toHaveLength(fits);
        for (const a of flood.filter((x) => !ok(x))) {
          expect(a.status, JSON.stringify(a.body).slice(0, 300)).toBe(429);
          expect(a.body).toMatchObject({
            code: "rate_limited",
            limit: { name: "city_vault_network_bytes_per_hour", limit: SETTLED_NETWORK_SHARE, remaining: 0 },
          });
          expect(a.body.detail).toContain(network);
          expect(Number(a.headers.get("retry-after"))).toBeGreaterThan(0);
        }
      }
      // Settled citizens of other networks: during the flood, and after it.
      expect(race.answers.slice(v4.length + v6.length).map((a) => a.status)).toEqual([200, 200]);
      for (const c of honestOnes.slice(2))
        expect((await send("/api/vault", honestV4(), { content: text(998, BYTES - ROW) }, c.citizen_secret)).status).toBe(200);
      const stored = async (flood: Admitted[]) =>
        (await Promise.all(flood.map((c) => city().count("vault_notes", `did = '${c.did}'`)))).reduce((sum, n) => sum + n, 0);
      expect([await stored(v4), await stored(v6)]).toEqual([fits, fits]);
      // After: a flooder that stored nothing is still refused this hour, from any address.
      const idle = v4[(await Promise.all(v4.map((c) => city().count("vault_notes", `did = '${c.did}'`)))).indexOf(0)]!;
      expect((await send("/api/vault", honestV4(), { content: "again" }, idle.citizen_secret)).status).toBe(429);
    },
    HEAVY_TEST_MS,
  );
});
