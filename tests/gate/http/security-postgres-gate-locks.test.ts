import { expect, it } from "vitest";
import { HEAVY_TEST_MS } from "../../support/limits";
import pg from "pg";
import { keyPair, presentation } from "../../support/gate";
import { type Answer, describeOnServer, usePostgresCity, useSecondInstance } from "../../support/postgres-city";

/*
 * Issue 29, item 2, through real HTTP: two `next start` instances on one PostgreSQL database
 * (node-postgres). Anonymous presentations of a victim's own name and origin (no nonce, no proof;
 * or text the gate refuses) can never admit or resume, so they must take neither the victim's row
 * nor the log's head. Measured by counting the backends that wait for a lock (pg_stat_activity,
 * wait_event_type 'Lock'), never by timing: a wait is a wait on a loaded machine too. The latencies
 * of the victim's own calls, storm and control (the same load of ask: look), are reported only.
 * And issue 42's gate nonces across both instances: handed out with no write at all, checked by
 * their MAC on either instance, spent once (the spent row's primary key) whatever the race.
 */

const DESCRIPTIONS = 40;
const RACERS = 16;
const LOOPS = 48;
const ENV = { CITY_DB_DRIVER: "pg" };

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

  /** Every table's rows, hashed in one statement: what requests that write nothing leave as it was. */
  const everyTable = () =>
    city().psql(
      `SELECT string_agg(tablename || ':' || (xpath('/row/h/text()', query_to_xml(format('SELECT md5(coalesce(string_agg(x::text, ''|'' ORDER BY x::text), '''')) AS h FROM %I x', tablename), false, true, '')))[1]::text, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'`,
    );

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
      for (let tries = 0; tries < 1200 && (await city().lockWaiters()) < 1; tries++) await new Promise((r) => setTimeout(r, 50));
      expect(await city().lockWaiters(), "the proven resume waits for the row the holder took").toBe(1);
      let settled = 0;
      const sent = Array.from({ length: LOOPS }, (_, i) => post(i, "/gate", unproven(victim, i)).finally(() => (settled += 1)));
      // Until every one is answered, or one waits (a failure bound only: the test counts, never times).
      for (let tries = 0; tries < 2400 && settled < LOOPS; tries++) {
        mostWaiting = Math.max(mostWaiting, (await city().lockWaiters()) - 1);
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
          mostWaiting = Math.max(mostWaiting, await city().lockWaiters());
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

  it(
    `hands out ${DESCRIPTIONS} nonces across both instances with addresses unknown writing nothing at all, and each instance takes the other's`,
    async () => {
      // The city's signing key, from which the nonce key is derived, is made once by the first description.
      expect((await call(0, "/gate")).status).toBe(200);
      const before = await everyTable();
      const answers = await Promise.all(Array.from({ length: DESCRIPTIONS }, (_, i) => call(i, "/gate")));
      expect(answers.map((a) => a.status)).toEqual(Array(DESCRIPTIONS).fill(200));
      const nonces = answers.map((a) => a.body.nonce as string);
      expect(new Set(nonces).size).toBe(DESCRIPTIONS);
      expect(await everyTable()).toEqual(before);
      // A nonce one instance made is spent at the other, once; the other instance's nonce likewise.
      for (const [made, spentAt] of [
        [0, 1],
        [1, 0],
      ] as const) {
        const look = (nonce: string) => post(spentAt, "/gate", presentation({ ask: "look", nonce }));
        expect((await look(nonces[made]!)).body.verdict).toBe("observer");
        expect((await look(nonces[made]!)).body).toMatchObject({ verdict: "filtered", rule: "nonce" });
      }
      expect(await city().count("gate_nonces", `nonce IN ('${nonces[0]}', '${nonces[1]}')`)).toBe(2);
    },
    HEAVY_TEST_MS,
  );

  it(
    `lets one nonce signed by ${RACERS} controller keys, presented at once on both instances, admit exactly one, and refuses forged and altered nonces`,
    async () => {
      const { nonce } = (await call(0, "/gate")).body as { nonce: string };
      const racers = await Promise.all(
        Array.from({ length: RACERS }, async (_, i) => {
          const key = await keyPair();
          return presentation({
            origin: `nonce-race-${i}-${Date.now()}.example`,
            nonce,
            controller_public_key: key.publicKey,
            controller_signature: await key.sign(nonce),
          });
        }),
      );
      const answers = await Promise.all(racers.map((p, i) => post(i, "/gate", p)));
      expect(answers.map((a) => a.status)).toEqual(Array(RACERS).fill(200));
      const admitted = answers.filter((a) => a.body.verdict === "admitted");
      expect(admitted, JSON.stringify(answers.map((a) => a.body.rule ?? a.body.verdict))).toHaveLength(1);
      expect(answers.filter((a) => a.body.verdict === "filtered" && a.body.rule === "nonce")).toHaveLength(RACERS - 1);
      expect(await city().count("gate_nonces", `nonce = '${nonce}'`)).toBe(1);
      expect(await city().count("citizens", `did = '${admitted[0]!.body.did}' AND controller_public_key IS NOT NULL`)).toBe(1);
      // Forged (no MAC of the city's) and altered (one hex digit of a real one): unknown, and nothing recorded.
      const fresh = (await call(1, "/gate")).body.nonce as string;
      const altered = `${fresh.slice(0, 20)}${fresh[20] === "0" ? "1" : "0"}${fresh.slice(21)}`;
      for (const bad of ["0123456789abcdef0123456789abcdef", altered]) {
        expect((await post(0, "/gate", presentation({ ask: "look", nonce: bad }))).body).toMatchObject({ verdict: "filtered", rule: "nonce" });
        expect(await city().count("gate_nonces", `nonce = '${bad}'`)).toBe(0);
      }
    },
    HEAVY_TEST_MS,
  );
});
