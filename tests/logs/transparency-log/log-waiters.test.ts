import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Database } from "@/db/client";
import { residencyLog as residencyLogRows } from "@/db/schema";
import { useDatabase } from "@/lib/city/database";
import {
  appendLog,
  awaitIntegration,
  integratedReceipt,
  integratePending,
  INTEGRATION_RETRY_POLLS,
  leafDataOf,
  logSigner,
  publishLogRow,
} from "@/lib/city/logs/residency-log";
import { verifyReceipt } from "@/lib/tlog/verifying-client";
import { describeOnDatabases } from "../../support/databases";

/*
 * What a writer costs the database while another integrates its entry (issue 42, CPU per
 * request): a poll is one statement and opens no transaction; the writer tries the head again
 * (a transaction of its own) only when the head moved without its entry, or after
 * INTEGRATION_RETRY_POLLS polls. Counted in statements and transactions, never in time: the
 * holder releases the head once the waiter has polled enough.
 */

/** The database as a waiter uses it, counting its top-level statements and its transactions. */
function counted(db: Database) {
  const counts = { statements: 0, transactions: 0 };
  const proxy = new Proxy(db, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== "function") return value;
      if (key === "transaction") return (...args: unknown[]) => (counts.transactions++, (value as (...a: unknown[]) => unknown).apply(target, args));
      if (key === "execute" || key === "select")
        return (...args: unknown[]) => (counts.statements++, (value as (...a: unknown[]) => unknown).apply(target, args));
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
  return { db: proxy as Database, counts };
}

/**
 * The database as a waiter uses it, counting its statements (`execute`) and its reads through the
 * query builder (`select`: its receipt's proof read back), each statement passing a gate the test
 * may close.
 */
function gated(db: Database) {
  const counts = { statements: 0, selects: 0 };
  let gate: Promise<void> = Promise.resolve();
  let open = () => {};
  const proxy = new Proxy(db, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== "function") return value;
      const call = (args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target, args);
      if (key === "execute") return async (...args: unknown[]) => (await gate, counts.statements++, call(args));
      if (key === "select") return (...args: unknown[]) => (counts.selects++, call(args));
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
  return {
    db: proxy as Database,
    counts,
    close: () => (gate = new Promise<void>((resolve) => (open = resolve))),
    open: () => open(),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeOnDatabases("a writer waiting for its entry's integration", (t) => {
  let other: { db: Database; close: () => Promise<void> } | null = null;
  beforeAll(async () => {
    useDatabase(t().db);
    other = await t().openAnotherInstance();
  });
  afterAll(async () => {
    await other?.close();
  });

  it("polls in one statement without a transaction, and tries the head again at most every INTEGRATION_RETRY_POLLS polls", async (ctx) => {
    if (!other) return ctx.skip("PGlite has one handle: only the PostgreSQL leg has two instances");
    const at = new Date();
    const { ticket } = await t().db.transaction((tx) =>
      appendLog(tx as Database, { event: "admit", did: "w".repeat(64), at, details: { name: "waiter", bed_id: 1 } }),
    );
    // Another instance holds the head and integrates nothing (a stalled integrator).
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = other.db.transaction(async (tx) => {
      await tx.execute(sql`SELECT 1 FROM log_head WHERE id = 1 FOR UPDATE`);
      locked();
      await held;
    });
    await isLocked;
    const waiter = counted(t().db);
    const receipt = awaitIntegration(waiter.db, ticket, at);
    // Released once the waiter sent 40 statements while the head was held.
    while (waiter.counts.statements < 40) await new Promise((resolve) => setTimeout(resolve, 1));
    const whileHeld = { ...waiter.counts };
    release();
    await holder;
    const got = await receipt;
    // The old loop opened a transaction and read its receipt twice on every 10 ms round (about 3
    // top-level statements per transaction); the polls now come INTEGRATION_RETRY_POLLS a try.
    expect(whileHeld.transactions).toBeLessThanOrEqual(Math.ceil(whileHeld.statements / INTEGRATION_RETRY_POLLS) + 1);
    const [row] = await t().db.select().from(residencyLogRows).where(eq(residencyLogRows.seq, got.seq));
    expect(row!.ticket).toBe(ticket);
    expect(await verifyReceipt(got, leafDataOf(publishLogRow(row!)), (await logSigner(t().db)).vkey)).toMatchObject({ ok: true });
  });

  it("takes its receipt from this instance's integrator once its batch committed: no more polls, and its proof not read back", async (ctx) => {
    if (!other) return ctx.skip("PGlite has one handle: only the PostgreSQL leg has two instances");
    const at = new Date();
    const write = (name: string) =>
      t().db.transaction((tx) => appendLog(tx as Database, { event: "admit", did: name.repeat(64).slice(0, 64), at, details: { name, bed_id: 1 } }));
    const { ticket } = await write("h");
    await write("i"); // a second entry in the batch: the first's proof needs a node of the tree
    // Another instance holds the checkpoints' table: the integrator below takes the head, and its
    // batch's one INSERT waits for that lock.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const blocker = other.db.transaction(async (tx) => {
      await tx.execute(sql`LOCK TABLE log_checkpoints IN SHARE MODE`);
      locked();
      await held;
    });
    await isLocked;
    const integrator = integratePending(t().db, at);
    const waitingOnLock = async () =>
      Number(
        (
          (await t().db.execute(sql`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = 'log_checkpoints'::regclass`)) as unknown as {
            rows: Array<{ n: number }>;
          }
        ).rows[0]!.n,
      );
    while ((await waitingOnLock()) === 0) await sleep(2);
    // The writer finds the head taken and polls.
    const waiter = gated(t().db);
    const receipt = awaitIntegration(waiter.db, ticket, at);
    while (waiter.counts.statements < 3) await sleep(1);
    // Its next statement waits until the integrator committed and handed the batch's receipts out.
    waiter.close();
    release();
    await blocker;
    expect(await integrator).toBeGreaterThanOrEqual(2);
    waiter.open();
    const got = await receipt;
    // Polling, it would have found its row and read its proof's nodes back (a select).
    expect(waiter.counts.selects).toBe(0);
    // The receipt handed over is the one a poll reads back.
    expect(got).toEqual(await integratedReceipt(t().db, ticket));
    const [row] = await t().db.select().from(residencyLogRows).where(eq(residencyLogRows.seq, got.seq));
    expect(row!.ticket).toBe(ticket);
    expect(await verifyReceipt(got, leafDataOf(publishLogRow(row!)), (await logSigner(t().db)).vkey)).toMatchObject({ ok: true });
  });
});
