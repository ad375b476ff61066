import { sql } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { rowsOf, useDatabase } from "@/db/client";
import { liveDoor } from "@/lib/doors/live";
import { describeOnDatabases } from "../support/databases";
import { admit, callDoor } from "../support/gate";

// For a pooler without protocol-level prepared statements (README, CITY_PREPARED_STATEMENTS).
process.env.CITY_PREPARED_STATEMENTS = "0";
process.env.CITY_GATE_PER_ADDRESS_PER_HOUR = "0";

describeOnDatabases("the poll with CITY_PREPARED_STATEMENTS=0", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("sends the poll unnamed: the connection keeps no prepared statement, and the poll answers as ever", async (ctx) => {
    if (t().driver === "pglite") return ctx.skip("PGlite runs in this process: nothing is sent, and it ignores the name");
    const me = await admit();
    for (let i = 0; i < 3; i++) {
      const answer = await callDoor(liveDoor, { bearer: me.citizen_secret, body: { action: "return" } });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.returned).toBe(false);
    }
    const prepared = rowsOf<{ name: string }>(await t().db.execute(sql`SELECT name FROM pg_prepared_statements WHERE name LIKE 'city\_%'`));
    expect(prepared).toEqual([]);
  });
});
