import { sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { preparedTexts, rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { encodePollCursor } from "@/lib/city/live";
import { describeGate } from "@/lib/doors/declarations/gate/gate";
import { liveDoor } from "@/lib/doors/declarations/live/live";
import { readInboxDoor } from "@/lib/doors/declarations/mail/mail";
import { mintToken } from "@/lib/doors/declarations/keys/tokens";
import { describeOnDatabases, HEAVY_TEST_MS } from "../support/databases";
import { admit, callDoor } from "../support/gate";
import { admitWithKey } from "../support/signed";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

describeOnDatabases(
  "the poll as a named prepared statement",
  (t) => {
    beforeAll(() => useDatabase(t().db));

    it("is prepared once per connection and reused whatever the poll's values: one statement, never one per cursor or schedule", async () => {
      const me = await admit();
      const asked = [
        { action: "return" },
        { action: "return", wake_on: ["direct_message"] },
        { action: "return", wake_on: ["room_reply", "law_changed"], return_after: new Date(Date.now() + 3_600_000).toISOString() },
        ...Array.from({ length: 6 }, (_, i) => ({ action: "return", cursor: encodePollCursor(new Date(Date.now() - (i + 1) * 60_000)) })),
      ];
      // One after another: the pool hands back the connection released last, so every poll and
      // the look-up below run on one connection, whose prepared statements the view lists.
      for (const body of asked) {
        const answer = await callDoor(liveDoor, { bearer: me.citizen_secret, body });
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        expect(answer.body.returned).toBe(false);
      }
      const prepared = rowsOf<{ name: string; statement: string }>(
        await t().db.execute(sql`SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'city\_%'`),
      );
      const polls = prepared.filter((p) => p.statement.includes("WITH me AS"));
      expect(polls.map((p) => p.name)).toHaveLength(1);
      expect(polls[0]!.statement).not.toContain(me.did);
    });

    it("sends the caller's look-up as a named prepared statement too: one per credential kind and way, whatever the caller", async () => {
      const citizens = [await admit(), await admit(), await admit()];
      const sessions: string[] = [];
      for (const c of citizens) sessions.push((await callDoor(mintToken, { bearer: c.citizen_secret, body: {} })).body.token as string);
      // One after another, as above: a poll (the look-up outside a transaction) and an inbox read
      // (a read's look-up), with the secret and with a session token, for every citizen.
      for (const [i, c] of citizens.entries()) {
        for (const bearer of [c.citizen_secret, sessions[i]!]) {
          expect((await callDoor(liveDoor, { bearer, body: { action: "return" } })).status).toBe(200);
          expect((await callDoor(readInboxDoor, { bearer })).status).toBe(200);
        }
      }
      const lookUps = rowsOf<{ statement: string }>(
        await t().db.execute(sql`SELECT statement FROM pg_prepared_statements WHERE name LIKE 'city\_%' AND statement LIKE '%WITH seen AS%'`),
      );
      // The secret's and the session token's look-ups (each with the seen mark), never one per caller.
      expect(lookUps.length).toBeGreaterThanOrEqual(2);
      expect(lookUps.length).toBeLessThanOrEqual(4);
      expect(lookUps.some((l) => l.statement.includes('"session_tokens"'))).toBe(true);
      for (const l of lookUps) for (const c of citizens) expect(l.statement).not.toContain(c.did);
    });

    it("hands out gate nonces through one prepared statement per shape, whoever asks", async () => {
      const me = await admit();
      // One after another (one connection, as above): anonymous callers and a citizen.
      for (const bearer of [undefined, undefined, me.citizen_secret, undefined, me.citizen_secret]) {
        const answer = await callDoor(describeGate, { bearer });
        expect(answer.status).toBe(200);
        expect(answer.body.nonce).toMatch(/^[0-9a-f]{32}$/);
      }
      const gate = rowsOf<{ statement: string }>(
        await t().db.execute(
          sql`SELECT statement FROM pg_prepared_statements WHERE name LIKE 'city\_%' AND statement LIKE '%census_counts%' AND statement LIKE '%ceiling_read%'`,
        ),
      );
      // The anonymous shape and the citizen's (its own row read beside the census).
      expect(gate).toHaveLength(2);
      for (const g of gate) expect(g.statement).not.toContain(me.did);
    });

    it("admits through its statements' texts kept per shape: drizzle builds none of them again, and no prepared text names a citizen", async () => {
      // The admission's statements (the first, ~15 kB: the nonce, the held name, the windows and
      // the bed; the second: the citizen and its log entries), sent prepared with their texts kept
      // per shape (db/statement-shapes.ts). Anonymous, then with a nonce and a controller key:
      // every shape sent once before the count starts.
      const warm = [await admit(), await admitWithKey()];
      const builtBefore = preparedTexts.built;
      const admitted = [];
      for (let i = 0; i < 3; i++) admitted.push(await admit(), await admitWithKey());
      expect(preparedTexts.built - builtBefore, "statements drizzle built whole during the second round of admissions").toBe(0);
      const texts = rowsOf<{ statement: string }>(
        await t().db.execute(sql`SELECT statement FROM pg_prepared_statements WHERE name LIKE 'city\_%' AND statement LIKE '%rate_swept%'`),
      );
      expect(texts.length).toBeGreaterThan(0);
      for (const text of texts) for (const c of [...warm, ...admitted]) expect(text.statement).not.toContain(c.did);
    });

    it(
      "keeps the poll's generic plan in a city of 100,000 beds: it is planned once, not on every call",
      async (ctx) => {
        // PGlite plans with PostgreSQL's own planner (its named statements: db/pglite-prepared.ts), but
        // 100,000 beds take it some 18 CPU-s to seed: the server's leg shows the plan.
        if (t().driver === "pglite") return ctx.skip("PGlite plans as PostgreSQL does; seeding 100,000 beds in WebAssembly is left to the server's leg");
        // Enough beds that a plan must guess the silent ones (a third of the partial index) and finds
        // that dearer than a plan that knows the cutoff, unless the cutoff is a subquery
        // (live-delta.ts). Citizens only, in one statement: the rest of a city does not move the plan.
        await t().db.execute(sql`
        INSERT INTO citizens (did, name, runtime, origin, name_key, origin_key, salt, secret_hash, bed_id, bound_at, last_seen_at)
        SELECT md5('plan-' || i) || md5('plan-' || i), 'plan-' || i, 'language-model', 'plan.example', 'plan-' || i, 'plan.example',
               md5('salt' || i), md5('secret-' || i), 'plan-bed-' || i, now(), now()
        FROM generate_series(1, 100000) AS i`);
        await t().db.execute(sql`ANALYZE citizens`);
        const me = await admit();
        const plans = async () =>
          rowsOf<{ generic_plans: string | number; custom_plans: string | number }>(
            await t().db.execute(
              sql`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'city\_%' AND statement LIKE '%WITH me AS%'`,
            ),
          ).map((p) => ({ generic: Number(p.generic_plans), custom: Number(p.custom_plans) }))[0] ?? { generic: 0, custom: 0 };
        const before = await plans();
        // PostgreSQL takes the generic plan once it is estimated cheaper than the custom plans so far
        // (their average, each with an estimate of its planning added). When this suite's other test
        // polled first, in a city of a few citizens, that average starts low and takes some forty
        // custom plans at this size to rise above the generic plan's estimate. At most 100 polls,
        // read after each (one connection, as above): the first generic plan ends them.
        const POLLS = 100;
        let polled = 0;
        let after = before;
        while (polled < POLLS && after.generic === before.generic) {
          expect((await callDoor(liveDoor, { bearer: me.citizen_secret, body: { action: "return" } })).status).toBe(200);
          polled += 1;
          after = await plans();
        }
        expect(after.generic + after.custom - before.generic - before.custom, `the ${polled} polls ran the prepared poll on this connection`).toBe(polled);
        expect(after.generic - before.generic, `generic plans of the ${polled} (custom: ${after.custom - before.custom})`).toBeGreaterThan(0);
      },
      HEAVY_TEST_MS,
    );
  },
  { neon: "named statements go through each driver's own protocol code (node-postgres and Neon's fork of it, over the relay)" },
);
