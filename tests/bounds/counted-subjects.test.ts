import { sql } from "drizzle-orm";
import { beforeAll, beforeEach, expect, it } from "vitest";
import { rowsOf } from "@/db/sql";
import { useDatabase } from "@/lib/city/database";
import { CLIENT_KEYED_SCOPES } from "@/lib/city/bounds/gate-windows";
import { presentAtGate } from "@/lib/city/gate";
import type { GateCircumstances } from "@/lib/city/challenge";
import { describeOnDatabases } from "../support/databases";
import { presentation } from "../support/gate";

/*
 * The gate's bound on counted subjects reads the client-keyed rows of rate_windows as migration
 * 0056's triggers count them (counted_subjects, 16 stripes), not a count of the table. The oracle is
 * fixed vectors of rows inserted, deleted and truncated, and the table itself counted in SQL after a
 * parallel run (on pg: parallel backends, several stripes).
 */
describeOnDatabases("counted subjects: the client-keyed rows counted as they come and go", (t) => {
  beforeAll(() => useDatabase(t().db));
  beforeEach(async () => {
    await t().raw("TRUNCATE rate_windows");
  });
  const counted = async () => Number(rowsOf<{ n: string }>(await t().db.execute(sql`SELECT coalesce(sum(n), 0) AS n FROM counted_subjects`))[0]!.n);
  const keyedRows = async () =>
    Number(
      rowsOf<{ n: string }>(
        await t().db.execute(
          sql.raw(
            `SELECT count(*) AS n FROM rate_windows WHERE scope IN (${CLIENT_KEYED_SCOPES.map((s) => `'${s}'`).join(", ")}) AND subject NOT LIKE 'overflow/%'`,
          ),
        ),
      )[0]!.n,
    );
  const insert = (scope: string, subject: string) =>
    t().raw(
      `INSERT INTO rate_windows (scope, subject, bucket, bucket_ms, counts, expires_at, allowed) VALUES ('${scope}', '${subject}', 0, 60000, '{1}', now() + interval '1 hour', true)
       ON CONFLICT (scope, subject) DO UPDATE SET counts = '{2}'`,
    );

  it("counts each client-keyed scope's rows, not overflow buckets nor other scopes; takes deleted rows off; a truncate empties it", async () => {
    expect(await counted()).toBe(0);
    for (const scope of CLIENT_KEYED_SCOPES) {
      await insert(scope, "198.51.100.0/24");
      await insert(scope, "203.0.113.7");
      await insert(scope, "overflow/3");
      // The same row again: an update, not a new subject.
      await insert(scope, "198.51.100.0/24");
    }
    for (const scope of ["gate-admissions", "gate-sponsor", "gate-sponsor-network", "write-vault"]) await insert(scope, "198.51.100.0/24");
    // Six client-keyed scopes, two subjects each.
    expect(CLIENT_KEYED_SCOPES).toHaveLength(6);
    expect(await counted()).toBe(12);
    await t().raw("DELETE FROM rate_windows WHERE subject = '203.0.113.7' OR scope = 'gate-admissions' OR subject = 'overflow/3'");
    expect(await counted()).toBe(6);
    await t().raw("TRUNCATE rate_windows");
    expect(await counted()).toBe(0);
  });

  it("equals the table counted after parallel presentations from new addresses and networks", async () => {
    const c = (ip: string): GateCircumstances => ({
      now: new Date(),
      ip,
      callerDid: null,
      credential: null,
      credentialRejected: false,
      limits: { perOriginPerHour: 100_000, perAddressPerHour: 30, perPrefixPerHour: 50, admissionsPerHour: 1000, subjectsMax: 20_000 },
    });
    const present = (i: number) =>
      t().db.transaction((tx) => presentAtGate(tx as never, presentation(i % 3 ? { ask: "look" } : {}) as never, c(`10.${60 + (i % 7)}.${i}.1`)));
    await Promise.all(Array.from({ length: 40 }, (_, i) => present(i)));
    const rows = await keyedRows();
    // 40 addresses and 7 networks at least (looks count per address and network; admissions their shares and origins too).
    expect(rows).toBeGreaterThanOrEqual(47);
    expect(await counted()).toBe(rows);
  }, 120_000);
});
