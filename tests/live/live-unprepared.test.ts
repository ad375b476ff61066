import { sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { liveDoor } from "@/lib/doors/declarations/live/live";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";

// For a pooler without protocol-level prepared statements (README, CITY_PREPARED_STATEMENTS).
process.env.CITY_PREPARED_STATEMENTS = "0";
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";

describeOnDatabases("the poll with CITY_PREPARED_STATEMENTS=0", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("sends the poll unnamed: the connection keeps no prepared statement, and the poll answers as ever", async () => {
    const me = await admit();
    // Three one after another, then three at once (so the pool holds more than one connection).
    for (let i = 0; i < 3; i++) {
      const answer = await callDoor(liveDoor, { bearer: me.citizen_secret, body: { action: "return" } });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.returned).toBe(false);
    }
    for (const answer of await Promise.all([1, 2, 3].map(() => callDoor(liveDoor, { bearer: me.citizen_secret, body: { action: "return" } })))) {
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    }
    // pg_prepared_statements lists only the asking connection's statements, so one look-up may
    // read a connection that never polled. Every connection the pool holds on this database (the
    // polls' among them; the look-up is at once, before an idle one could be closed) is asked:
    // connections are taken and held, one more each time, until each was asked once.
    const pollers = rowsOf<{ pid: number }>(await t().db.execute(sql`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)).map((r) =>
      Number(r.pid),
    );
    expect(pollers.length, "the pool's connections on this database").toBeGreaterThan(0);
    const asked = new Map<number, string[]>();
    const holds: Array<{ release: () => void; done: Promise<unknown> }> = [];
    try {
      for (let i = 0; i < 10 && !pollers.every((pid) => asked.has(pid)); i++) {
        let release!: () => void;
        const released = new Promise<void>((resolve) => (release = resolve));
        let read!: (row: { pid: number; names: string[] }) => void;
        const answered = new Promise<{ pid: number; names: string[] }>((resolve) => (read = resolve));
        const done = t().db.transaction(async (tx) => {
          const [row] = rowsOf<{ pid: number; names: string[] | null }>(
            await tx.execute(sql`SELECT pg_backend_pid() AS pid, (SELECT array_agg(name) FROM pg_prepared_statements WHERE name LIKE 'city\_%') AS names`),
          );
          read({ pid: Number(row!.pid), names: row!.names ?? [] });
          await released;
        });
        holds.push({ release, done });
        const { pid, names } = await answered;
        asked.set(pid, names);
      }
    } finally {
      for (const hold of holds) hold.release();
      await Promise.all(holds.map((h) => h.done));
    }
    expect(
      pollers.filter((pid) => !asked.has(pid)),
      "every connection of the pool was asked",
    ).toEqual([]);
    for (const pid of pollers) expect(asked.get(pid), `prepared statements on connection ${pid}`).toEqual([]);
  });
});
