import { sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { rowsOf, useDatabase } from "@/db/client";
import { encodePollCursor } from "@/lib/city/live";
import { liveDoor } from "@/lib/doors/live";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";

process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";
process.env.CITY_GATE_PER_ORIGIN_PER_HOUR = "100000";

describeOnDatabases(
  "the poll as a named prepared statement",
  (t) => {
    beforeAll(() => useDatabase(t().db));

    it("is prepared once per connection and reused whatever the poll's values: one statement, never one per cursor or schedule", async (ctx) => {
      if (t().driver === "pglite") return ctx.skip("PGlite runs in this process: nothing is sent, and it ignores the name");
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
      const prepared = rowsOf<{ name: string; statement: string }>(await t().db.execute(sql`SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'city\_%'`));
      const polls = prepared.filter((p) => p.statement.includes("WITH me AS"));
      expect(polls.map((p) => p.name)).toHaveLength(1);
      expect(polls[0]!.statement).not.toContain(me.did);
    });
  },
  { neon: "named statements go through each driver's own protocol code (node-postgres and Neon's fork of it, over the relay)" },
);
