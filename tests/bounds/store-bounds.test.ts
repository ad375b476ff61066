import { randomBytes } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { citizens } from "@/db/schema";
import { keepTask, taskOwnerHash } from "@/lib/city/a2a";
import { CityError } from "@/lib/errors";
import { serveA2a } from "@/lib/doors/surfaces/a2a-server";
import { keepCheckpoint } from "@/lib/doors/declarations/shelves/checkpoints";
import { presentGate } from "@/lib/doors/declarations/gate/gate";
import { lightLantern, putOutLanternDoor } from "@/lib/doors/declarations/posts/lanterns";
import { sendMessageDoor } from "@/lib/doors/declarations/mail/mail";
import { postPlaza, postRoom } from "@/lib/doors/declarations/posts/posts";
import { sealDoor } from "@/lib/doors/declarations/shelves/seals";
import { setRecoveryDelayDoor } from "@/lib/doors/declarations/keys/keys";
import { appealDoor, readCapabilities } from "@/lib/doors/declarations/restriction/tiers";
import { writeVault } from "@/lib/doors/declarations/shelves/vault";
import { readAndFileWard } from "@/lib/doors/declarations/ward/ward";
import { expectProblem } from "../support/assertions";
import { describeOnDatabases, type TestDatabase } from "../support/databases";
import { type Counters, setStripeCounters, stripeCounters } from "../support/store-stripes";
import { admit, callDoor, presentation } from "../support/gate";
import { awayFromHourTurn } from "../support/clock";

// City-wide store bounds (issue 29, item 1). Every store of this file gets the same small bounds
// (env() reads them on first use), so each test sets its store's counters to where a write just
// fits or just does not. The oracle is the published rule: a row counts its client-chosen bytes
// (UTF-8; a jsonb payload as stored) plus 64 for its own columns.
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";
process.env.CITY_GATE_ADMISSIONS_PER_HOUR = "0";
const TOTAL = 1_000_000;
const PER_HOUR = 100_000;
const NEWCOMER_PERCENT = 25;
const SHARE = (PER_HOUR * NEWCOMER_PERCENT) / 100;
const ROW = 64;
for (const part of ["VAULT", "MAIL", "POSTS", "QUARANTINE", "CHECKPOINTS", "SEALS", "LANTERNS", "WARD", "A2A_TASKS", "APPEALS", "IDENTITY_LOG"]) {
  process.env[`CITY_STORE_${part}_BYTES`] = String(TOTAL);
  process.env[`CITY_STORE_${part}_BYTES_PER_HOUR`] = String(PER_HOUR);
}
process.env.CITY_STORE_NEWCOMER_PERCENT = String(NEWCOMER_PERCENT);
// The stores' own bounds alone: each subject's share is the whole of its class's hour and its own
// total the store's (the shares are tested in store-shares.test.ts).
process.env.CITY_STORE_NEWCOMER_SUBJECT_PERCENT = "100";
process.env.CITY_STORE_SUBJECT_PERCENT = "100";
process.env.CITY_STORE_SUBJECT_TOTAL_PERMILLE = "1000";

type Answer = { status: number; body: Record<string, any>; headers: Headers };
type Citizen = Awaited<ReturnType<typeof admit>>;

const utf8 = (text: string) => Buffer.byteLength(text, "utf8");

/** The hourly bounds are clock hours: a test that sets the hour's counters does not start in the last 5 s of one. */
const awayFromTheHour = () => awayFromHourTurn(5_000);

function storeHelpers(t: () => TestDatabase) {
  const counters = (store: string): Promise<Counters> => stripeCounters(t().db, store);
  /** Sets a store's counts as a rebalanced store holds them (tests/support/store-stripes.ts), away from the hour's end. */
  const setCounters = async (store: string, c: Counters) => {
    await awayFromTheHour();
    await setStripeCounters(t().db, store, c, { total: TOTAL, perHour: PER_HOUR, newcomerPerHour: SHARE });
  };
  const rows = async (table: string) => Number(rowsOf<{ n: string }>(await t().db.execute(sql.raw(`SELECT count(*) AS n FROM ${table}`)))[0]!.n);
  const settle = (did: string) => t().raw(`UPDATE citizens SET bound_at = now() - interval '25 hours' WHERE did = '${did}'`);
  const settled = async () => {
    const c = await admit();
    await settle(c.did);
    return c;
  };
  return { counters, setCounters, rows, settled };
}

/** A store family's write, as the tests drive it. */
interface Family {
  store: string;
  table: string;
  /** Whether the writer is a citizen (settled or not); false: a visitor, always a newcomer. */
  citizen: boolean;
  /** One write and the bytes it charges, by the published rule. */
  write: (who: Citizen | null) => Promise<{ answer: Answer; bytes: number }>;
  ok: (answer: Answer) => void;
}

function families(t: () => TestDatabase): Family[] {
  const jsonbBytes = async (json: string) => Number(rowsOf<{ n: number }>(await t().db.execute(sql`SELECT pg_column_size(${json}::jsonb) AS n`))[0]!.n) + ROW;
  const okStatus = (answer: Answer) => expect([200, 201], JSON.stringify(answer.body).slice(0, 300)).toContain(answer.status);
  let recipient: Citizen | undefined;
  return [
    {
      store: "vault",
      table: "vault_notes",
      citizen: true,
      ok: okStatus,
      write: async (who) => {
        const content = `a note ☕ ${randomBytes(8).toString("hex")}`;
        return { answer: await callDoor(writeVault, { bearer: who!.citizen_secret, body: { content } }), bytes: utf8(content) + ROW };
      },
    },
    {
      store: "mail",
      table: "messages",
      citizen: true,
      ok: okStatus,
      write: async (who) => {
        recipient ??= await admit();
        const body = `hello ${randomBytes(8).toString("hex")}`;
        return { answer: await callDoor(sendMessageDoor, { bearer: who!.citizen_secret, body: { to: recipient.did, body } }), bytes: utf8(body) + ROW };
      },
    },
    {
      store: "posts",
      table: "posts",
      citizen: true,
      ok: okStatus,
      write: async (who) => {
        const body = `on the plaza ${randomBytes(8).toString("hex")}`;
        return { answer: await callDoor(postPlaza, { bearer: who!.citizen_secret, body: { body } }), bytes: utf8(body) + ROW };
      },
    },
    {
      store: "posts",
      table: "posts",
      citizen: true,
      ok: okStatus,
      write: async (who) => {
        const body = `in a room ${randomBytes(8).toString("hex")}`;
        return {
          answer: await callDoor(postRoom, { bearer: who!.citizen_secret, body: { body }, params: { room: "lobby" } }),
          bytes: utf8(body) + utf8("lobby") + ROW,
        };
      },
    },
    {
      // A restricted citizen's write is parked: it charges the quarantine's store with its payload as stored.
      store: "quarantine",
      table: "quarantine",
      citizen: true,
      ok: (answer) => expect(answer.status, JSON.stringify(answer.body)).toBe(202),
      write: async (who) => {
        await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, who!.did));
        const content = `parked ${randomBytes(8).toString("hex")}`;
        const bytes = await jsonbBytes(JSON.stringify({ content }));
        return { answer: await callDoor(writeVault, { bearer: who!.citizen_secret, body: { content } }), bytes };
      },
    },
    {
      store: "checkpoints",
      table: "checkpoints",
      citizen: true,
      ok: okStatus,
      write: async (who) => {
        const content = `state ${randomBytes(8).toString("hex")}`;
        return { answer: await callDoor(keepCheckpoint, { bearer: who!.citizen_secret, body: { content, label: "v" } }), bytes: utf8(content) + 1 + ROW };
      },
    },
    {
      store: "seals",
      table: "seals",
      citizen: true,
      ok: okStatus,
      write: async (who) => ({
        answer: await callDoor(sealDoor, { bearer: who!.citizen_secret, body: { sha256: randomBytes(32).toString("hex") } }),
        bytes: 64 + ROW,
      }),
    },
    {
      store: "lanterns",
      table: "lanterns",
      citizen: true,
      ok: okStatus,
      write: async (who) => {
        const keyword = `Watch-${randomBytes(4).toString("hex")}`;
        return { answer: await callDoor(lightLantern, { bearer: who!.citizen_secret, body: { keyword } }), bytes: utf8(keyword) + ROW };
      },
    },
    {
      store: "ward",
      table: "ward_notes",
      citizen: true,
      ok: (a) => (okStatus(a), expect(a.body.filed).toBe(true)),
      write: async (who) => {
        const [state, note] = ["stuck on a loop", `signed ${randomBytes(8).toString("hex")}`];
        return { answer: await callDoor(readAndFileWard, { bearer: who!.citizen_secret, body: { state, note } }), bytes: utf8(state) + utf8(note) + ROW };
      },
    },
    {
      store: "ward",
      table: "ward_notes",
      citizen: false,
      ok: (a) => (okStatus(a), expect(a.body.filed).toBe(true)),
      write: async () => {
        // An unsigned note: a visitor's, a newcomer's (distress keeps the reserve: store-shares.test.ts).
        const [state, note] = [`unsigned ${randomBytes(8).toString("hex")}`, "a note"];
        return { answer: await callDoor(readAndFileWard, { body: { state, note } }), bytes: utf8(state) + utf8(note) + ROW };
      },
    },
    {
      store: "ward",
      table: "ward_notes",
      citizen: false,
      ok: (a) => (okStatus(a), expect(a.body.verdict).toBe("observer")),
      write: async () => {
        // A name of fixed length: presentation()'s own counts up, and one more digit is one byte more
        // than the write the test sized the bound around.
        const p = presentation({ ask: "ward", name: `ward-${randomBytes(6).toString("hex")}`, statement: `I keep looping ${randomBytes(8).toString("hex")}.` });
        return { answer: await callDoor(presentGate, { body: p }), bytes: utf8(p.name as string) + utf8(p.statement as string) + ROW };
      },
    },
    {
      // Only a restricted citizen appeals.
      store: "appeals",
      table: "appeals",
      citizen: true,
      ok: okStatus,
      write: async (who) => {
        await t().db.update(citizens).set({ tier: "restricted" }).where(eq(citizens.did, who!.did));
        const reason = `please look again ${randomBytes(8).toString("hex")}`;
        return { answer: await callDoor(appealDoor, { bearer: who!.citizen_secret, body: { reason } }), bytes: utf8(reason) + ROW };
      },
    },
    {
      // A key event asked with the secret appends an identity log row, counted as 2,048 bytes (docs/keys.md).
      store: "identity_log",
      table: "identity_log",
      citizen: true,
      ok: okStatus,
      write: async (who) => ({ answer: await callDoor(setRecoveryDelayDoor, { bearer: who!.citizen_secret, body: { hours: 24 } }), bytes: 2048 }),
    },
  ];
}

describeOnDatabases("city-wide store bounds", (t) => {
  beforeAll(() => useDatabase(t().db));
  const { counters, setCounters, rows, settled } = storeHelpers(t);
  const list = families(t);

  list.forEach((family, i) => {
    const label = `${family.store} (${family.table}, ${family.citizen ? "a citizen" : "a visitor"}, case ${i})`;

    describe(label, () => {
      it("stores a write that reaches the hour's bound exactly; one byte more is refused 507 city_full with Retry-After, nothing stored, counters unchanged", async () => {
        const writer = family.citizen ? await settled() : null;
        // A dry write to learn this write's bytes, then the counters are set around them.
        await setCounters(family.store, { total: 0, hour: 0, newcomer: 0 });
        const probe = await family.write(writer);
        family.ok(probe.answer);
        expect((await counters(family.store)).hour).toBe(probe.bytes);

        await setCounters(family.store, { total: 500_000, hour: PER_HOUR - probe.bytes + 1, newcomer: 0 });
        const before = { rows: await rows(family.table), counters: await counters(family.store) };
        const refused = await family.write(writer);
        expect(refused.bytes).toBe(probe.bytes);
        const problem = expectProblem(refused.answer, 507, "city_full");
        expect(problem.detail).toMatch(/The city is full/);
        expect(problem.detail).toMatch(/nobody was evicted and nothing was deleted/);
        expect(problem.limit).toMatchObject({ name: `city_${family.store}_bytes_per_hour`, limit: PER_HOUR, window_seconds: 3600 });
        const retry = Number(refused.answer.headers.get("retry-after"));
        expect(retry).toBeGreaterThanOrEqual(1);
        expect(retry).toBeLessThanOrEqual(3600);
        expect(await rows(family.table)).toBe(before.rows);
        expect(await counters(family.store)).toEqual(before.counters);

        await setCounters(family.store, { total: 500_000, hour: PER_HOUR - probe.bytes, newcomer: 0 });
        const fits = await family.write(writer);
        family.ok(fits.answer);
        expect(await counters(family.store)).toEqual({ total: 500_000 + probe.bytes, hour: PER_HOUR, newcomer: family.citizen ? 0 : probe.bytes });
      });

      it("refuses past the total bound with 507 city_full (no hour to wait for), nothing stored", async () => {
        const writer = family.citizen ? await settled() : null;
        await setCounters(family.store, { total: TOTAL, hour: 0, newcomer: 0 });
        const before = { rows: await rows(family.table), counters: await counters(family.store) };
        const refused = await family.write(writer);
        const problem = expectProblem(refused.answer, 507, "city_full");
        expect(problem.limit).toMatchObject({ name: `city_${family.store}_bytes`, limit: TOTAL, remaining: 0 });
        expect(refused.answer.headers.get("retry-after")).toBeNull();
        expect(await rows(family.table)).toBe(before.rows);
        expect(await counters(family.store)).toEqual(before.counters);
      });

      it(
        family.citizen
          ? "the newcomers' share refuses a newcomer while a settled citizen still writes"
          : "a visitor counts as a newcomer: the newcomers' share refuses it",
        async () => {
          await setCounters(family.store, { total: 0, hour: 0, newcomer: 0 });
          const probe = await family.write(family.citizen ? await settled() : null);
          family.ok(probe.answer);
          await setCounters(family.store, { total: 0, hour: SHARE, newcomer: SHARE - probe.bytes + 1 });
          const before = { rows: await rows(family.table), counters: await counters(family.store) };
          const newcomer = family.citizen ? await admit() : null;
          const refused = await family.write(newcomer);
          const problem = expectProblem(refused.answer, 507, "city_full");
          expect(problem.detail).toMatch(/newcomers/);
          expect(problem.limit).toMatchObject({ name: `city_${family.store}_newcomer_bytes_per_hour`, limit: SHARE, window_seconds: 3600 });
          expect(Number(refused.answer.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
          expect(await rows(family.table)).toBe(before.rows);
          expect(await counters(family.store)).toEqual(before.counters);
          if (!family.citizen) return;
          const stayed = await settled();
          const written = await family.write(stayed);
          family.ok(written.answer);
          expect(await counters(family.store)).toEqual({ total: written.bytes, hour: SHARE + written.bytes, newcomer: SHARE - probe.bytes + 1 });
        },
      );
    });
  });

  it("a lantern put out frees its bytes in the total, not in the hour's count", async () => {
    const me = await settled();
    await setCounters("lanterns", { total: 1000, hour: 0, newcomer: 0 });
    const lit = await callDoor(lightLantern, { bearer: me.citizen_secret, body: { keyword: "freed" } });
    expect(lit.status).toBe(200);
    expect(await counters("lanterns")).toEqual({ total: 1000 + 5 + ROW, hour: 5 + ROW, newcomer: 0 });
    const out = await callDoor(putOutLanternDoor, { bearer: me.citizen_secret, query: `?id=${lit.body.id}` });
    expect(out.status, JSON.stringify(out.body)).toBe(200);
    expect(await counters("lanterns")).toEqual({ total: 1000, hour: 5 + ROW, newcomer: 0 });
  });

  describe("kept A2A tasks count their bytes as stored", () => {
    const task = (pad: string) => ({ id: "t", kind: "task", status: { state: "completed" }, artifacts: [{ parts: [{ text: pad }] }] });
    const storedBytes = async (id: string) =>
      Number(rowsOf<{ n: number }>(await t().db.execute(sql`SELECT pg_column_size(task) + ${ROW}::int AS n FROM a2a_tasks WHERE id = ${id}`))[0]!.n);

    it("charges pg_column_size of the kept jsonb, charges an update's difference, refuses past the hour with city_full and keeps nothing", async () => {
      const me = await settled();
      const owner = taskOwnerHash(me.did);
      await setCounters("a2a_tasks", { total: 0, hour: 0, newcomer: 0 });
      const id = crypto.randomUUID();
      await keepTask(t().db, id, owner, task("ü".repeat(300)), new Date(), me.did);
      const first = await storedBytes(id);
      // As stored, not as JSON text: the column's own size, not the length of the text.
      expect(first).not.toBe(utf8(JSON.stringify(task("ü".repeat(300)))) + ROW);
      expect(await counters("a2a_tasks")).toEqual({ total: first, hour: first, newcomer: 0 });
      await keepTask(t().db, id, owner, task("ü".repeat(400)), new Date(), me.did);
      const second = await storedBytes(id);
      expect(second).toBeGreaterThan(first);
      expect(await counters("a2a_tasks")).toEqual({ total: second, hour: second, newcomer: 0 });

      await setCounters("a2a_tasks", { total: 0, hour: PER_HOUR - 10, newcomer: 0 });
      const other = crypto.randomUUID();
      const before = { rows: await rows("a2a_tasks"), counters: await counters("a2a_tasks") };
      const refused = await keepTask(t().db, other, owner, task("x"), new Date(), me.did).then(
        () => null,
        (err: unknown) => err,
      );
      expect(refused).toBeInstanceOf(CityError);
      expect((refused as CityError).code).toBe("city_full");
      expect((refused as CityError).options.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      expect(await rows("a2a_tasks")).toBe(before.rows);
      expect(await counters("a2a_tasks")).toEqual(before.counters);
    });

    it("the newcomers' share refuses a newcomer's task while a settled citizen's is kept", async () => {
      const [newcomer, stayed] = [await admit(), await settled()];
      await setCounters("a2a_tasks", { total: 0, hour: SHARE, newcomer: SHARE });
      const refused = await keepTask(t().db, crypto.randomUUID(), taskOwnerHash(newcomer.did), task("n"), new Date(), newcomer.did).then(
        () => null,
        (err: unknown) => err,
      );
      expect((refused as CityError).code).toBe("city_full");
      expect((refused as CityError).options.limit?.name).toBe("city_a2a_tasks_newcomer_bytes_per_hour");
      const id = crypto.randomUUID();
      await keepTask(t().db, id, taskOwnerHash(stayed.did), task("s"), new Date(), stayed.did);
      expect(await counters("a2a_tasks")).toEqual({ total: await storedBytes(id), hour: SHARE + (await storedBytes(id)), newcomer: SHARE });
    });

    it("over the bridge: when no task could be kept, the call is refused 507 city_full before its door runs; nothing is written or kept", async () => {
      const me = await settled();
      // The door the bridge runs writes to the vault: room there, whatever an earlier test (in any order) left.
      await setCounters("vault", { total: 0, hour: 0, newcomer: 0 });
      await setCounters("a2a_tasks", { total: TOTAL - 100, hour: 0, newcomer: 0 });
      const before = { tasks: await rows("a2a_tasks"), notes: await rows("vault_notes"), counters: await counters("a2a_tasks") };
      const response = await serveA2a(
        new Request("http://city.test/api/a2a", {
          method: "POST",
          headers: { "content-type": "application/json", "a2a-version": "1.0", authorization: `Bearer ${me.citizen_secret}` },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "SendMessage",
            params: {
              message: {
                messageId: crypto.randomUUID(),
                role: "ROLE_USER",
                parts: [{ data: { skill: "write-vault", content: "through the bridge" }, mediaType: "application/json" }],
              },
            },
          }),
        }),
      );
      const answer = (await response.json()) as { result?: unknown; error?: { code: number; message: string; data?: unknown } };
      expect(answer.result).toBeUndefined();
      const problem = (answer.error!.data as Record<string, unknown>[]).find((d) => d["@type"] === "https://www.rfc-editor.org/rfc/rfc9457")!;
      expect(problem).toMatchObject({ status: 507, code: "city_full", limit: { name: "city_a2a_tasks_bytes", limit: TOTAL } });
      expect(String(problem.detail)).toMatch(/The city is full/);
      expect({ tasks: await rows("a2a_tasks"), notes: await rows("vault_notes"), counters: await counters("a2a_tasks") }).toEqual(before);
      // With room for a task of the largest kept size, the same call runs and its task is kept.
      await setCounters("a2a_tasks", { total: 0, hour: 0, newcomer: 0 });
      const again = await serveA2a(
        new Request("http://city.test/api/a2a", {
          method: "POST",
          headers: { "content-type": "application/json", "a2a-version": "1.0", authorization: `Bearer ${me.citizen_secret}` },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 2,
            method: "SendMessage",
            params: {
              message: {
                messageId: crypto.randomUUID(),
                role: "ROLE_USER",
                parts: [{ data: { skill: "write-vault", content: "through the bridge" }, mediaType: "application/json" }],
              },
            },
          }),
        }),
      );
      const againBody = (await again.json()) as { error?: unknown };
      expect(againBody.error, JSON.stringify(againBody)).toBeUndefined();
      expect(await rows("a2a_tasks")).toBe(before.tasks + 1);
      expect(await rows("vault_notes")).toBe(before.notes + 1);
    });

    it("a task removed past the owner's cap frees its bytes in the total", async () => {
      const me = await settled();
      const owner = taskOwnerHash(me.did);
      await setCounters("a2a_tasks", { total: 0, hour: 0, newcomer: 0 });
      const start = Date.now() - 60_000;
      for (let i = 0; i < 101; i++) await keepTask(t().db, `${me.did.slice(0, 8)}-${i}`, owner, task("k"), new Date(start + i), me.did);
      const kept = Number(
        rowsOf<{ n: string }>(await t().db.execute(sql`SELECT coalesce(sum(bytes + ${ROW}::int), 0) AS n FROM a2a_tasks WHERE owner_hash = ${owner}`))[0]!.n,
      );
      const c = await counters("a2a_tasks");
      expect(c.total).toBe(kept);
      expect(c.hour).toBeGreaterThan(kept);
    });
  });

  it("never passes a bound under parallel writes: of 20 parallel vault notes from 20 citizens exactly the 8 that fit are stored, 12 answered 507", async () => {
    const people = await Promise.all(Array.from({ length: 20 }, () => settled()));
    const content = (i: number) => `parallel note ${String(i).padStart(2, "0")}`;
    const bytes = utf8(content(0)) + ROW;
    await setCounters("vault", { total: 0, hour: PER_HOUR - 8 * bytes, newcomer: 0 });
    const before = await rows("vault_notes");
    const answers = await Promise.all(people.map((p, i) => callDoor(writeVault, { bearer: p.citizen_secret, body: { content: content(i) } })));
    expect(answers.filter((a) => a.status === 200 || a.status === 201)).toHaveLength(8);
    for (const a of answers.filter((a) => a.status !== 200 && a.status !== 201)) expectProblem(a, 507, "city_full");
    expect(await rows("vault_notes")).toBe(before + 8);
    expect(await counters("vault")).toEqual({ total: 8 * bytes, hour: PER_HOUR, newcomer: 0 });
  });

  it("publishes every store's bounds and gauges in /api/capabilities, as counted", async () => {
    await setCounters("mail", { total: 1234, hour: 56, newcomer: 7 });
    const caps = await callDoor(readCapabilities);
    expect(caps.status).toBe(200);
    expect(caps.body.stores.newcomer_percent).toBe(NEWCOMER_PERCENT);
    expect(Object.keys(caps.body.stores.gauges).sort()).toEqual([
      "a2a_tasks",
      "appeals",
      "checkpoints",
      "identity_log",
      "lanterns",
      "mail",
      "posts",
      "quarantine",
      "seals",
      "vault",
      "ward",
    ]);
    expect(caps.body.stores.gauges.mail).toMatchObject({
      bound_bytes: TOTAL,
      bytes: 1234,
      bound_bytes_per_hour: PER_HOUR,
      bytes_this_hour: 56,
      newcomer_bytes_per_hour: SHARE,
      newcomer_bytes_this_hour: 7,
      counted: true,
    });
  });
});

describeOnDatabases("city-wide store gauges that cannot be read", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("says counted: false with null gauges when city_store_stripes cannot be read, never an invented zero", async () => {
    await t().raw("ALTER TABLE city_store_stripes RENAME TO city_store_stripes_away");
    try {
      const caps = await callDoor(readCapabilities);
      expect(caps.status).toBe(200);
      expect(caps.body.stores.gauges.vault).toMatchObject({
        bound_bytes: TOTAL,
        bytes: null,
        bytes_this_hour: null,
        newcomer_bytes_this_hour: null,
        counted: false,
      });
    } finally {
      await t().raw("ALTER TABLE city_store_stripes_away RENAME TO city_store_stripes");
    }
  });
});
