import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openLockSampler, type LockSampler } from "@/scripts/bench-locks";
import { describeMissingServer } from "../support/databases";

/*
 * The benchmark's lock sampler (scripts/bench-locks.ts) on PostgreSQL: a backend that waits for
 * another's row lock is counted as waiting, the holder idle in its transaction is not counted at
 * all, and a backend that is busy without waiting on a lock (pg_sleep) is active and not waiting;
 * what a waiting backend waits for is named (its lock, its statement, its blocker's last one).
 * The contention legs' "share of active backends waiting on a Lock" rests on this.
 */
const name = "the bench's lock sampler reads the backends waiting on a Lock from pg_stat_activity";
const serverUrl = process.env.TEST_DATABASE_URL;

if (!serverUrl) describeMissingServer(name);
else
  describe(name, () => {
    const database = `city_test_locks_${process.pid}_${randomBytes(4).toString("hex")}`;
    const url = new URL(serverUrl);
    url.pathname = `/${database}`;
    const admin = new pg.Client({ connectionString: serverUrl });
    const holder = new pg.Client({ connectionString: url.toString() });
    const waiter = new pg.Client({ connectionString: url.toString() });
    let sampler: LockSampler;

    beforeAll(async () => {
      await admin.connect();
      await admin.query(`CREATE DATABASE ${database}`);
      await holder.connect();
      await waiter.connect();
      await holder.query("CREATE TABLE contended (id int PRIMARY KEY, v int); INSERT INTO contended VALUES (1, 0)");
      sampler = await openLockSampler(serverUrl, database, 5);
    }, 60_000);
    afterAll(async () => {
      await sampler?.close();
      await holder.end().catch(() => undefined);
      await waiter.end().catch(() => undefined);
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
    }, 60_000);

    /** Waits (by asking pg_stat_activity, not by time) until the backend `pid` is active and waits on `event`. */
    async function waitFor(pid: number, event: string) {
      for (;;) {
        const { rows } = await admin.query("SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1 AND state = 'active'", [pid]);
        if (rows[0]?.wait_event_type === event) return;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }

    it("counts a backend waiting for another's row lock, and not the holder idle in its transaction", async () => {
      const waiterPid = (await waiter.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      await holder.query("BEGIN");
      await holder.query("UPDATE contended SET v = 1 WHERE id = 1");
      const blocked = waiter.query("UPDATE contended SET v = 2 WHERE id = 1");
      await waitFor(waiterPid, "Lock");
      await sampler.start();
      const waiting = await sampler.stop();
      expect(waiting.samples).toBeGreaterThan(0);
      expect(waiting).toMatchObject({ share: 1, meanActive: 1 });
      // What it waited for, seen in every sample: the holder's transaction, and both statements.
      expect(waiting.waits).toEqual([
        {
          lock: "transactionid",
          waiting: "UPDATE contended SET v = 2 WHERE id = 1",
          blocker: "idle in transaction: UPDATE contended SET v = 1 WHERE id = 1",
          seen: waiting.samples,
        },
      ]);
      await holder.query("COMMIT");
      await blocked;
      await sampler.start();
      expect(await sampler.stop()).toMatchObject({ share: null, meanActive: 0, waits: [] });
    });

    it("counts a busy backend that waits on no lock as active and not waiting", async () => {
      const waiterPid = (await waiter.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      const sleeping = waiter.query("SELECT pg_sleep(600)").catch((err: Error) => err);
      await waitFor(waiterPid, "Timeout");
      await sampler.start();
      const busy = await sampler.stop();
      await admin.query("SELECT pg_cancel_backend($1)", [waiterPid]);
      expect(await sleeping).toBeInstanceOf(Error);
      expect(busy.samples).toBeGreaterThan(0);
      expect(busy).toMatchObject({ share: 0, meanActive: 1, waits: [] });
    });
  });
