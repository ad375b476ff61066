import { count, eq, sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import type { Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { identityLog as identityLogRows, identityLogTables, logHead, residencyLog } from "@/db/schema";
import { useDatabase } from "@/lib/city/database";
import { appendIdentityLog, identityLog } from "@/lib/city/logs/identity-log";
import { appendLog, awaitIntegration, logSigner } from "@/lib/city/logs/residency-log";
import { leafDataOf, type LogReceipt, publishLogRow, withLogReceipts } from "@/lib/city/logs/transparency-log";
import { verifyReceipt, verifyTransparencyLog } from "@/lib/tlog/verifying-client";
import { describeOnDatabases } from "../../support/databases";
import { cityFetch } from "../../support/log-city";

const DID = "d".repeat(64);

/** An error's message with its causes' (the drivers wrap the database's). */
function causes(err: unknown): string {
  const out: string[] = [];
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) out.push(e instanceof Error ? e.message : String(e));
  return out.join(" <- ");
}
const OTHER = "e".repeat(64);

describeOnDatabases(
  "the identity log: appendIdentityLog in the caller's transaction, with a receipt that verifies offline",
  (t) => {
    beforeAll(() => useDatabase(t().db));
    const vkey = async () => (await identityLog.logSigner(t().db)).vkey;
    const sizeNow = async () => (await identityLog.latestCheckpoint(t().db)).checkpoint?.size ?? 0;
    const rowOf = async (seq: number) => publishLogRow((await t().db.select().from(identityLogRows).where(eq(identityLogRows.seq, seq)))[0]!);

    it("appends a key event chained to the one before, and its receipt (identity_log_receipt) verifies against the identity log's key", async () => {
      const at = new Date(Date.UTC(2026, 10, 1, 12));
      const events: Parameters<typeof appendIdentityLog>[1][] = [
        { event: "key-bound", did: DID, at, details: { thumbprint: "t".repeat(43), public_key: "ab".repeat(32) } },
        { event: "delay-set", did: DID, at: new Date(at.getTime() + 1000), details: { delay_hours: 48 } },
        { event: "key-bound", did: OTHER, at: new Date(at.getTime() + 2000), details: { thumbprint: "u".repeat(43), imported: false } },
      ];
      const before = await sizeNow();
      const receipts: LogReceipt[] = [];
      for (const entry of events) {
        const { value, receipts: carried } = await withLogReceipts(() => t().db.transaction((tx) => appendIdentityLog(tx as Database, entry)));
        // The identity log's receipt has a field of its own; the residency log's stays absent.
        expect(Object.keys(carried)).toEqual(["identity_log_receipt"]);
        expect(carried.identity_log_receipt).toEqual(value.logReceipt);
        // Integrated after the commit (each append here is a batch of its own): its receipt replaces the one to come.
        receipts.push(await identityLog.awaitIntegration(t().db, value.ticket));
      }
      expect(receipts.map((r) => [r.seq - before, r.leaf_index - before, r.tree_size - before])).toEqual([
        [1, 0, 1],
        [2, 1, 2],
        [3, 2, 3],
      ]);
      const key = await vkey();
      expect(key.split("+")[0]).toMatch(/\/identity-log$/);
      for (const receipt of receipts) {
        const row = await rowOf(receipt.seq);
        expect(verifyReceipt(receipt, leafDataOf(row), key)).toMatchObject({ ok: true });
        // Another row's data, or the residency log's key (another origin), refuse it.
        const other = await rowOf(receipt.seq === 1 ? 2 : receipt.seq - 1);
        expect(verifyReceipt(receipt, leafDataOf(other), key).ok).toBe(false);
        expect(verifyReceipt(receipt, leafDataOf(row), (await logSigner(t().db)).vkey).ok).toBe(false);
      }
      const second = await rowOf(before + 2);
      expect(second).toMatchObject({ seq: before + 2, event: "delay-set", did: DID, delay_hours: 48, prev_hash: (await rowOf(before + 1)).hash });
      expect(await identityLog.verifyHashChain(t().db, new Date())).toMatchObject({ intact: true, rows_checked: before + 3 });
      // The residency log is untouched: its head is where its rows end.
      const [residencyRows] = await t().db.select({ n: count() }).from(residencyLog);
      expect((await t().db.select().from(logHead))[0]!.seq).toBe(residencyRows!.n);
    });

    it("rolls back with the caller's transaction: no row, no checkpoint, the head unmoved", async () => {
      const before = await sizeNow();
      await expect(
        t().db.transaction(async (tx) => {
          await appendIdentityLog(tx as Database, { event: "key-rotated", did: DID, at: new Date() });
          throw new Error("the change it records failed");
        }),
      ).rejects.toThrow("the change it records failed");
      expect(await sizeNow()).toBe(before);
      expect((await t().db.select().from(identityLogTables.head))[0]!.seq).toBe(before);
      expect((await t().db.select({ n: count() }).from(identityLogTables.pending))[0]!.n).toBe(0);
    });

    it("a write that appends to both logs carries both receipts, each verifying against its own log's key", async () => {
      const at = new Date();
      const { value, receipts } = await withLogReceipts(() =>
        t().db.transaction(async (tx) => {
          const admitted = await appendLog(tx as Database, { event: "admit", did: OTHER, at, details: { bed_id: 1 } });
          const bound = await appendIdentityLog(tx as Database, { event: "key-bound", did: OTHER, at, details: { thumbprint: "v".repeat(43) } });
          return { admitted, bound };
        }),
      );
      expect(receipts.log_receipt).toEqual(value.admitted.logReceipt);
      expect(receipts.identity_log_receipt).toEqual(value.bound.logReceipt);
      const admitted = await awaitIntegration(t().db, value.admitted.ticket);
      const bound = await identityLog.awaitIntegration(t().db, value.bound.ticket);
      const [admittedRow] = await t().db.select().from(residencyLog).where(eq(residencyLog.seq, admitted.seq));
      expect(verifyReceipt(admitted, leafDataOf(publishLogRow(admittedRow!)), (await logSigner(t().db)).vkey).ok).toBe(true);
      expect(verifyReceipt(bound, leafDataOf(await rowOf(bound.seq)), await vkey()).ok).toBe(true);
      // Each against its own log only.
      expect(verifyReceipt(bound, leafDataOf(await rowOf(bound.seq)), (await logSigner(t().db)).vkey).ok).toBe(false);
    });

    it("parallel appends record without the head and integrate as one batch: a gapless chain, one checkpoint for all six", async () => {
      // What other tests of this file left pending (they append without waiting for a receipt) goes first.
      await identityLog.integratePending(t().db);
      const before = await sizeNow();
      const [checkpointsBefore] = rowsOf<{ n: number }>(await t().db.execute(sql`SELECT count(*)::int AS n FROM identity_log_checkpoints`));
      const appended = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          t().db.transaction((tx) => appendIdentityLog(tx as Database, { event: "recovery-held", did: DID, at: new Date(), details: { reason: `r${i}` } })),
        ),
      );
      const receipts = await Promise.all(appended.map((a) => identityLog.awaitIntegration(t().db, a.ticket)));
      expect(receipts.map((r) => r.tree_size)).toEqual(Array(6).fill(before + 6));
      expect(await identityLog.verifyHashChain(t().db, new Date())).toMatchObject({ intact: true, rows_checked: before + 6 });
      const [held] = rowsOf<{ n: number }>(await t().db.execute(sql`SELECT count(*)::int AS n FROM identity_log_checkpoints`));
      expect(held!.n).toBe(checkpointsBefore!.n + 1);
    });

    it("passes the residency log's outside verifier (the card's identity_log: signature, tiles, consistency), which hands every proven entry", async () => {
      await t().db.transaction((tx) => appendIdentityLog(tx as Database, { event: "next-keys-committed", did: DID, at: new Date(), details: { count: 2 } }));
      const seen: string[] = [];
      const first = await verifyTransparencyLog("https://city.test", {
        fetch: cityFetch,
        log: "identity_log",
        onEntry: (_, data) => seen.push(new TextDecoder().decode(data)),
      });
      expect(first.ok, first.lines.join("\n")).toBe(true);
      expect(first.lines[1]).toMatch(/^signature: valid \(.*\/identity-log, size \d+\)$/);
      expect(seen.map((d) => JSON.parse(d).seq)).toEqual(Array.from({ length: first.state!.size }, (_, i) => i + 1));
      await t().db.transaction((tx) => appendIdentityLog(tx as Database, { event: "delay-set", did: DID, at: new Date(), details: { delay_hours: 24 } }));
      const grown = await verifyTransparencyLog("https://city.test", { fetch: cityFetch, log: "identity_log", state: first.state });
      expect(grown.ok, grown.lines.join("\n")).toBe(true);
      expect(grown.lines.at(-1)).toBe(`consistency: size ${first.state!.size + 1} extends the size ${first.state!.size} seen last time`);
      // The residency log's key does not verify the identity log.
      const crossed = await verifyTransparencyLog("https://city.test", { fetch: cityFetch, log: "identity_log", vkey: (await logSigner(t().db)).vkey });
      expect(crossed.ok).toBe(false);
    });

    it("is append-only: UPDATE, DELETE and TRUNCATE of its rows and tree are refused by the database", async () => {
      // A row integrated (not only pending) for the statements to meet.
      await identityLog.appendNow(t().db, { event: "secret-reset", did: DID, at: new Date() });
      for (const statement of [
        "UPDATE identity_log SET did = 'x' WHERE seq = 1",
        "DELETE FROM identity_log WHERE seq = 1",
        "TRUNCATE identity_log",
        "DELETE FROM identity_log_checkpoints",
        "UPDATE identity_log_nodes SET hash = 'x'",
        "DELETE FROM identity_log_identity",
      ]) {
        const failure = await t()
          .raw(statement)
          .then(
            () => null,
            (err: unknown) => err,
          );
        expect(causes(failure), statement).toMatch(/append-only/);
      }
    });
  },
  { neon: "the append runs in the caller's interactive transaction and parallel appends race the head's try-lock after their commits" },
);
