import { count, is, sql } from "drizzle-orm";
import { getTableConfig, PgTable } from "drizzle-orm/pg-core";
import { expect, it } from "vitest";
import * as schema from "@/db/schema";
import { citizens, residencyLog } from "@/db/schema";
import { rowsOf } from "@/db/sql";
import { expectAppendOnly } from "../support/assertions";
import { describeOnDatabases } from "../support/databases";
import { insertCitizenRow } from "../support/citizens";

describeOnDatabases(
  "database layer",
  (t) => {
    it("applies every migration", async () => {
      const result = await t().db.execute(sql`SELECT to_regclass('public.citizens') AS citizens, to_regclass('public.residency_log') AS log`);
      const row = ((result as { rows?: unknown[] }).rows ?? result) as { citizens: string | null; log: string | null }[];
      expect(row[0]).toEqual({ citizens: "citizens", log: "residency_log" });
    });

    it("holds exactly the relations db/schema declares, each with its columns (no table or view left behind)", async () => {
      const declared = new Map<string, string[]>();
      // A table is exported as it is or in a group (each log's tables: logTables).
      const exported = Object.values(schema).flatMap((value) =>
        is(value, PgTable) ? [value] : typeof value === "object" && value ? Object.values(value) : [],
      );
      for (const table of exported.filter((value) => is(value, PgTable))) {
        const config = getTableConfig(table);
        declared.set(config.name, config.columns.map((c) => c.name).sort());
      }
      const result = await t().db.execute(
        sql`SELECT c.table_name, t.table_type, array_agg(c.column_name::text) AS columns
              FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name)
             WHERE c.table_schema = 'public' GROUP BY c.table_name, t.table_type`,
      );
      const present = new Map(
        rowsOf<{ table_name: string; table_type: string; columns: string[] }>(result).map((r) => [
          `${r.table_type === "VIEW" ? "view " : ""}${r.table_name}`,
          r.columns.sort(),
        ]),
      );
      expect(Object.fromEntries(present)).toEqual(Object.fromEntries(declared));
    });

    it("rolls back an earlier insert when the transaction throws", async () => {
      const { db } = t();
      const before = await db.select({ n: count() }).from(citizens);
      await expect(
        db.transaction(async (tx) => {
          await insertCitizenRow(tx as never);
          const inside = await tx.select({ n: count() }).from(citizens);
          expect(inside[0]!.n).toBe(before[0]!.n + 1);
          throw new Error("boom");
        }),
      ).rejects.toThrow("boom");
      const after = await db.select({ n: count() }).from(citizens);
      expect(after[0]!.n).toBe(before[0]!.n);
    });

    it("runs interactive transactions that read their own writes and commit", async () => {
      const { db } = t();
      const did = await db.transaction(async (tx) => (await insertCitizenRow(tx as never)).did);
      const rows = await db
        .select()
        .from(citizens)
        .where(sql`${citizens.did} = ${did}`);
      expect(rows).toHaveLength(1);
    });

    it("refuses UPDATE, DELETE and TRUNCATE on an append-only table, leaving the rows", async () => {
      const { db, raw } = t();
      await db.insert(residencyLog).values({ seq: 1, event: "admit", did: "a".repeat(64), at: new Date(), prevHash: "0".repeat(64), hash: "1".repeat(64) });
      await expectAppendOnly(t(), "residency_log", ["UPDATE residency_log SET event = 'exit'", "DELETE FROM residency_log", "TRUNCATE residency_log"]);
      const rows = await db.select().from(residencyLog);
      expect(rows).toHaveLength(1);
      expect(rows[0]!.event).toBe("admit");
    });
  },
  { neon: "the relay: migrations and the schema through each driver" },
);
