import { count, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Database } from "@/db/client";
import { logCheckpoints, residencyLogTables, residencyLog as residencyLogRows } from "@/db/schema";
import { useDatabase } from "@/lib/city/database";
import {
  appendLog,
  appendNow,
  awaitIntegration,
  currentCheckpoint,
  integratedReceipt,
  integratePending,
  leafDataOf,
  logSigner,
  type LogReceipt,
  publishLogRow,
  verifyHashChain,
} from "@/lib/city/logs/residency-log";
import { verifyReceipt } from "@/lib/tlog/verifying-client";
import { describeOnDatabases } from "../../support/databases";

/*
 * Batched integration (docs/log.md "Integration"): a write records its entry pending and commits;
 * whoever takes the head afterwards integrates every pending entry under ONE checkpoint. Counted by
 * work (rows of log_checkpoints, rows of log_pending), never by time.
 */

const pending = residencyLogTables.pending;
const did = (i: number) => `${i}`.padStart(64, "d");
const entry = (i: number, at = new Date()) => ({ event: "admit" as const, did: did(i), at, details: { name: `batch-${i}`, bed_id: i } });

describeOnDatabases(
  "the logs integrate in batches",
  (t) => {
    let other: { db: Database; close: () => Promise<void> } | null = null;
    beforeAll(async () => {
      useDatabase(t().db);
      other = await t().openAnotherInstance();
    });
    afterAll(async () => {
      await other?.close();
    });

    const countOf = async (table: typeof pending | typeof logCheckpoints | typeof residencyLogRows) => (await t().db.select({ n: count() }).from(table))[0]!.n;
    /** A write that commits its entry and ends before any integration: as a writer that crashed after its commit. */
    const recordOnly = (db: Database, i: number, at?: Date) => db.transaction((tx) => appendLog(tx as Database, entry(i, at)));
    /** The receipt verified offline, from the log's key alone, over the row the log publishes at its seq. */
    const verifiesOffline = async (receipt: LogReceipt) => {
      const [row] = await t().db.select().from(residencyLogRows).where(eq(residencyLogRows.seq, receipt.seq));
      return verifyReceipt(receipt, leafDataOf(publishLogRow(row!)), (await logSigner(t().db)).vkey);
    };

    it("leaves a crashed writer's entries pending, and the next appender integrates them before its own, in their order, under one checkpoint", async () => {
      const rowsBefore = await countOf(residencyLogRows);
      const checkpointsBefore = await countOf(logCheckpoints);
      const left = [];
      for (let i = 0; i < 3; i++) left.push(await recordOnly(t().db, 100 + i));
      expect(await countOf(pending)).toBe(3);
      expect(await countOf(residencyLogRows)).toBe(rowsBefore);
      expect(await countOf(logCheckpoints)).toBe(checkpointsBefore);

      const next = await appendNow(t().db, entry(103));
      expect(next.logReceipt.seq).toBe(rowsBefore + 4);
      expect(next.logReceipt.tree_size).toBe(rowsBefore + 4);
      expect(await countOf(pending)).toBe(0);
      expect(await countOf(logCheckpoints)).toBe(checkpointsBefore + 1);
      for (const [k, { ticket }] of left.entries()) {
        const receipt = await awaitIntegration(t().db, ticket);
        expect(receipt).toMatchObject({ seq: rowsBefore + 1 + k, tree_size: rowsBefore + 4 });
        expect(await verifiesOffline(receipt)).toMatchObject({ ok: true });
        const [row] = await t().db.select().from(residencyLogRows).where(eq(residencyLogRows.seq, receipt.seq));
        expect(row!.did).toBe(did(100 + k));
      }
      expect(await verifyHashChain(t().db)).toMatchObject({ intact: true, rows_checked: rowsBefore + 4 });
    });

    it("integrates what a crashed writer left when a reader asks for the latest checkpoint", async () => {
      const rowsBefore = await countOf(residencyLogRows);
      await recordOnly(t().db, 200);
      await recordOnly(t().db, 201);
      const checkpoint = await currentCheckpoint(t().db, new Date());
      expect(checkpoint.size).toBe(rowsBefore + 2);
      expect(await countOf(pending)).toBe(0);
    });

    it("stamps an entry recorded before the row ahead of it with that row's time: seq order is time order", async () => {
      const late = await appendNow(t().db, entry(300, new Date(Date.UTC(2030, 0, 2))));
      const early = await appendNow(t().db, entry(301, new Date(Date.UTC(2030, 0, 1))));
      const rows = await t()
        .db.select()
        .from(residencyLogRows)
        .where(sql`${residencyLogRows.seq} IN (${late.logReceipt.seq}, ${early.logReceipt.seq})`);
      expect(early.logReceipt.seq).toBe(late.logReceipt.seq + 1);
      expect(rows.map((r) => r.at.toISOString())).toEqual([new Date(Date.UTC(2030, 0, 2)).toISOString(), new Date(Date.UTC(2030, 0, 2)).toISOString()]);
    });

    it("records nothing for a write that rolled back, and its ticket never integrates", async () => {
      let ticket = "";
      await expect(
        t().db.transaction(async (tx) => {
          ticket = (await appendLog(tx as Database, entry(400))).ticket;
          throw new Error("the write fails after its append");
        }),
      ).rejects.toThrow("the write fails");
      expect(await countOf(pending)).toBe(0);
      await expect(awaitIntegration(t().db, ticket)).rejects.toThrow(/no entry with this ticket/);
    });

    it("refuses to change a pending entry (a trigger): it is integrated as it was recorded", async () => {
      await recordOnly(t().db, 500);
      const refused = await t()
        .raw(`UPDATE log_pending SET did = '${"e".repeat(64)}'`)
        .then(() => null)
        .catch((err: { message?: string; cause?: { message?: string } }) => `${err.message} ${err.cause?.message ?? ""}`);
      expect(refused).toMatch(/never changed/);
      expect(await integratePending(t().db)).toBe(1);
      const [last] = await t()
        .db.select()
        .from(residencyLogRows)
        .orderBy(sql`seq DESC`)
        .limit(1);
      expect(last!.did).toBe(did(500));
    });

    it("integrates 24 appends committed through two instances as ONE batch: one checkpoint, a gap-free chain, every receipt verifying offline", async () => {
      const instances = [t().db, other?.db ?? t().db];
      const rowsBefore = await countOf(residencyLogRows);
      const checkpointsBefore = await countOf(logCheckpoints);
      const tickets = await Promise.all(Array.from({ length: 24 }, (_, i) => recordOnly(instances[i % 2]!, 600 + i)));
      const receipts = await Promise.all(tickets.map(({ ticket }, i) => awaitIntegration(instances[i % 2]!, ticket)));
      // Every writer waited for one integration: 24 rows, one signature.
      expect(await countOf(logCheckpoints)).toBe(checkpointsBefore + 1);
      expect(new Set(receipts.map((r) => r.seq)).size).toBe(24);
      expect(receipts.map((r) => r.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 24 }, (_, i) => rowsBefore + 1 + i));
      for (const [i, receipt] of receipts.entries()) {
        expect(receipt.tree_size).toBe(rowsBefore + 24);
        expect(await verifiesOffline(receipt)).toMatchObject({ ok: true });
        // The integrator's writer worked its proof out in memory; every other read it back: the same.
        expect(await integratedReceipt(t().db, tickets[i]!.ticket)).toEqual(receipt);
      }
      expect(await verifyHashChain(t().db)).toMatchObject({ intact: true, rows_checked: rowsBefore + 24 });
    });

    it("answers busy at once while another instance holds the head, and integrates once it is free", async (ctx) => {
      if (!other) return ctx.skip("PGlite has one handle: only the PostgreSQL leg has two instances");
      await recordOnly(t().db, 700);
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
      expect(await integratePending(t().db)).toBe("busy");
      expect(await countOf(pending)).toBe(1);
      release();
      await holder;
      expect(await integratePending(t().db)).toBe(1);
    });

    it("chains appends that record and integrate at once through two instances into one gap-free log, never forked", async () => {
      const instances = [t().db, other?.db ?? t().db];
      const rowsBefore = await countOf(residencyLogRows);
      const checkpointsBefore = await countOf(logCheckpoints);
      const receipts = await Promise.all(Array.from({ length: 32 }, (_, i) => appendNow(instances[i % 2]!, entry(800 + i))));
      expect(receipts.map((r) => r.logReceipt.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 32 }, (_, i) => rowsBefore + 1 + i));
      for (const { logReceipt } of receipts) expect(await verifiesOffline(logReceipt)).toMatchObject({ ok: true });
      expect(await verifyHashChain(t().db)).toMatchObject({ intact: true, rows_checked: rowsBefore + 32 });
      // At most one checkpoint per append, whatever the interleaving (one per batch).
      expect(await countOf(logCheckpoints)).toBeLessThanOrEqual(checkpointsBefore + 32);
      expect(await countOf(pending)).toBe(0);
    });
  },
  { ordered: "one growing log", neon: "two Neon pools race the head's try-lock (SKIP LOCKED) and the pending rows of one database" },
);
