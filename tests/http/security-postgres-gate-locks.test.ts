import { expect, it } from "vitest";
import pg from "pg";
import { presentation } from "../support/gate";
import { type Answer, describeOnServer, usePostgresCity, useSecondInstance } from "../support/postgres-city";

/*
 * Issue 29, item 2, through real HTTP: two `next start` instances on one PostgreSQL database
 * (node-postgres). Anonymous presentations of a victim's own name and origin (no nonce, no proof;
 * or text the gate refuses) can never admit or resume, so they must take neither the victim's row
 * nor the log's head. Measured by counting the backends that wait for a lock (pg_stat_activity,
 * wait_event_type 'Lock'), never by timing: a wait is a wait on a loaded machine too. The latencies
 * of the victim's own calls, storm and control (the same load of ask: look), are reported only.
 * And item 8's nonce bound, across both instances with addresses unknown.
 */

const NONCES_LIVE = 40;
const LOOPS = 48;
const ENV = { CITY_DB_DRIVER: "pg", CITY_GATE_NONCES_LIVE: String(NONCES_LIVE) };

describeOnServer("the gate on two `next start` instances over one PostgreSQL database: no lock before proof (issue 29, item 2)", () => {
  const city = usePostgresCity("security-postgres-gate-locks", ENV);
  const other = useSecondInstance(city, ENV);

  /** A request to one of the two instances, alternately. */
  async function call(i: number, path: string, init: RequestInit = {}): Promise<Answer> {
    const base = i % 2 ? other().baseUrl : city().server.baseUrl;
    const response = await fetch(`${base}${path}`, init);
    const text = await response.text();
    const type = response.headers.get("content-type") ?? "";
    return { status: response.status, type, headers: response.headers, body: text && type.includes("json") ? JSON.parse(text) : { text } };
  }
  const post = (i: number, path: string, body: unknown, bearer?: string) =>
    call(i, path, {
      method: "POST",
      headers: { "content-type": "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      body: JSON.stringify(body),
    });

  /** Backends of this database waiting for a lock right now. */
  const waiting = async () =>
    Number(await city().psqlAsync("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"));

  async function victimOf() {
    const shown = presentation({ origin: `victim-${Date.now()}.example` });
    const answer = await post(0, "/gate", shown);
    expect(answer.body.verdict, JSON.stringify(answer.body)).toBe("admitted");
    return { did: answer.body.did as string, secret: answer.body.citizen_secret as string, name: shown.name, origin: shown.origin };
  }
  /** What an anonymous loop presents: the victim's name and origin, no nonce, no proof; every third with text the gate refuses. */
  const unproven = (victim: { name: string; origin: string }, i: number) =>
    presentation({ name: victim.name, origin: victim.origin, ...(i % 3 === 2 ? { statement: `my key city_sk_${"ab".repeat(36)}` } : {}) });

  it(`answers ${LOOPS} unproven presentations of a held name while another transaction holds the citizen's row and the log's head: none waits`, async () => {
    const victim = await victimOf();
    const holder = new pg.Client({ connectionString: city().databaseEnv.DATABASE_URL });
    await holder.connect();
    let answers: Answer[] = [];
    let mostWaiting = 0;
    let proven: Promise<Answer> | undefined;
    try {
      // As the victim's own write would: its row, then the head (the order of every appender).
      await holder.query("BEGIN");
      await holder.query("SELECT did FROM citizens WHERE did = $1 FOR UPDATE", [victim.did]);
      await holder.query("SELECT seq FROM log_head WHERE id = 1 FOR UPDATE");
      // The control: the victim's own proven resume must take its row, so it waits (the probe sees waits).
      proven = post(1, "/gate", presentation({ name: victim.name, origin: victim.origin }), victim.secret);
      for (let tries = 0; tries < 1200 && (await waiting()) < 1; tries++) await new Promise((r) => setTimeout(r, 50));
      expect(await waiting(), "the proven resume waits for the row the holder took").toBe(1);
      let settled = 0;
      const sent = Array.from({ length: LOOPS }, (_, i) => post(i, "/gate", unproven(victim, i)).finally(() => (settled += 1)));
      // Until every one is answered, or one waits (a failure bound only: the test counts, never times).
      for (let tries = 0; tries < 2400 && settled < LOOPS; tries++) {
        mostWaiting = Math.max(mostWaiting, (await waiting()) - 1);
        if (mostWaiting > 0) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      expect({ answeredWhileHeld: settled, mostWaiting }).toEqual({ answeredWhileHeld: LOOPS, mostWaiting: 0 });
      answers = await Promise.all(sent);
    } finally {
      await holder.query("COMMIT").catch(() => undefined);
      await holder.end();
    }
    for (const [i, a] of answers.entries()) {
      expect(a.status).toBe(200);
      expect(a.body.verdict).toBe("filtered");
      if (i % 3 !== 2) expect(a.body.rule).toBe("held");
    }
    expect((await proven!).body).toMatchObject({ verdict: "admitted", resumed: true, did: victim.did });
  }, 120_000);

  it(`keeps the victim's polls, leaves and returns free of lock waits under ${LOOPS} anonymous loops presenting its name, as under the same load of looks`, async () => {
    const victim = await victimOf();
    /** Runs the loops until the victim's rounds are done, sampling lock waiters meanwhile; the victim's call latencies. */
    async function storm(present: (i: number) => Record<string, unknown>) {
      let stop = false;
      let sentByLoops = 0;
      let mostWaiting = 0;
      const loops = Array.from({ length: LOOPS }, async (_, i) => {
        while (!stop) {
          const a = await post(i, "/gate", present(i));
          expect(a.status).toBe(200);
          sentByLoops += 1;
        }
      });
      const sampler = (async () => {
        while (!stop) {
          mostWaiting = Math.max(mostWaiting, await waiting());
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      const latencies: number[] = [];
      const timed = async (i: number, path: string, body: unknown) => {
        const started = performance.now();
        const a = await post(i, path, body, victim.secret);
        latencies.push(performance.now() - started);
        expect(a.status, JSON.stringify(a.body)).toBe(200);
      };
      try {
        for (let round = 0; round < 6; round++) {
          await timed(round, "/api/live", { action: "return" });
          await timed(round + 1, "/api/leave", {});
          await timed(round, "/api/return", {});
        }
      } finally {
        stop = true;
        await Promise.all([...loops, sampler]);
      }
      const p50 = [...latencies].sort((a, b) => a - b)[Math.floor(latencies.length / 2)]!;
      return { mostWaiting, sentByLoops, p50 };
    }
    const attack = await storm((i) => unproven(victim, i));
    const control = await storm(() => presentation({ name: victim.name, origin: victim.origin, ask: "look" }));
    console.log(
      `victim p50 under ${LOOPS} loops: unproven presentations ${attack.p50.toFixed(0)} ms (${attack.sentByLoops} sent), looks ${control.p50.toFixed(0)} ms (${control.sentByLoops} sent); most lock waiters sampled ${attack.mostWaiting} and ${control.mostWaiting}`,
    );
    expect(attack.sentByLoops).toBeGreaterThan(LOOPS);
    expect({ attack: attack.mostWaiting, control: control.mostWaiting }).toEqual({ attack: 0, control: 0 });
  }, 240_000);

  it(`issues at most ${NONCES_LIVE} gate nonces city-wide across both instances with addresses unknown, then 429 with Retry-After, storing none`, async () => {
    const issued = () => city().count("gate_nonces", "holder IS NULL AND expires_at > now()");
    const used = issued();
    const answers = await Promise.all(Array.from({ length: NONCES_LIVE + 20 }, (_, i) => call(i, "/gate")));
    const ok = answers.filter((a) => a.status === 200);
    expect(ok).toHaveLength(NONCES_LIVE - used);
    for (const a of answers.filter((x) => x.status !== 200)) {
      expect(a.status).toBe(429);
      expect(a.type).toMatch(/^application\/problem\+json/);
      expect(Number(a.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(a.body.detail).toMatch(new RegExp(`at most ${NONCES_LIVE} gate nonces in any 600 seconds, to all clients together`));
    }
    expect(issued()).toBe(NONCES_LIVE);
    // A presentation without a nonce is still admitted.
    expect((await post(1, "/gate", presentation())).body.verdict).toBe("admitted");
  }, 60_000);
});
