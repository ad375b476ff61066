import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { appendNow } from "@/lib/city/logs/residency-log";
import { keepLockerBag } from "@/lib/doors/declarations/shelves/locker";
import { exportResidency } from "@/lib/doors/declarations/residency/residency";
import { writeVault } from "@/lib/doors/declarations/shelves/vault";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

/*
 * Issue 29, item 10: nothing slow runs under the city-wide log head. An export is stopped mid-read
 * (another connection holds the seals table, the last shelf it reads, in ACCESS EXCLUSIVE mode), and
 * a bystander's append must go through meanwhile. Deterministic: no timing is compared; the test
 * waits for the export to be a lock waiter, then sees the bystander either finish or become the
 * second lock waiter (the head held by the export), whichever comes first.
 */
describeOnDatabases("export holds no log head while it reads and scans the shelves", (t) => {
  let other: { db: Database; close: () => Promise<void> } | null = null;
  beforeAll(async () => {
    useDatabase(t().db);
    other = await t().openAnotherInstance();
  });
  afterAll(async () => {
    await other?.close();
  });

  const lockWaiters = async () =>
    Number(
      rowsOf<{ n: number | string }>(
        await t().db.execute(sql.raw("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")),
      )[0]!.n,
    );
  const pause = () => new Promise((resolve) => setTimeout(resolve, 20));
  /** Polls until the condition holds, a bounded number of times (the bound is a count, not a budget the test asserts). */
  const until = async (what: string, condition: () => Promise<boolean>) => {
    for (let i = 0; i < 1500; i++) {
      if (await condition()) return;
      await pause();
    }
    throw new Error(`never: ${what}`);
  };

  it("lets a bystander append while an export is blocked mid-read, and the export then completes after it", async (ctx) => {
    if (!other) return ctx.skip("PGlite runs one transaction at a time: only PostgreSQL can hold an export mid-read");
    const me = await admit();
    await callDoor(keepLockerBag, { bearer: me.citizen_secret, body: { bag: "notes", content: "kept" } });
    await callDoor(writeVault, { bearer: me.citizen_secret, body: { content: "a note" } });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held!: () => void;
    const holding = new Promise<void>((resolve) => (held = resolve));
    const blocker = other.db.transaction(async (tx) => {
      await tx.execute(sql.raw("LOCK TABLE seals IN ACCESS EXCLUSIVE MODE"));
      held();
      await released;
    });
    await holding;
    const exporting = callDoor(exportResidency, { bearer: me.citizen_secret, body: {} });
    try {
      await until("the export waits on the held shelf", async () => (await lockWaiters()) >= 1);
      let appended = false;
      const bystander = appendNow(t().db, { event: "admit", did: "b".repeat(64), at: new Date(), details: { name: "bystander" } }).then((row) => {
        appended = true;
        return row;
      });
      // Either the bystander's append is done, or it has become a second lock waiter (on the head).
      await until("the bystander finishes or waits", async () => appended || (await lockWaiters()) >= 2);
      expect(appended, "the bystander's append waited behind an export blocked mid-read: the export held the log head while reading").toBe(true);
      const row = await bystander;
      release();
      await blocker;
      const answer = await exporting;
      expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(200);
      expect(answer.body.log_seq).toBeGreaterThan(row.logReceipt.seq);
      expect(answer.body.log_receipt.seq).toBe(answer.body.log_seq);
      expect(answer.body.locker).toHaveLength(1);
      expect(answer.body.vault).toHaveLength(1);
    } finally {
      release();
      await blocker.catch(() => undefined);
      await exporting.catch(() => undefined);
    }
  });
});
