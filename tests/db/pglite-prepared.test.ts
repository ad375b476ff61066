import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { executePrepared, rowsOf } from "@/db/sql";
import { createTestDatabase, type TestDatabase } from "../support/databases";

/*
 * PGlite's named prepared statements (db/pglite-prepared.ts): what executePrepared answers on the
 * embedded database is what the plain path answers, inside and outside a transaction, through an
 * error, and never inside another caller's open transaction.
 */

const errorCode = (err: unknown): string | undefined => {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) if (typeof e.code === "string") return e.code;
  return undefined;
};

describe("named prepared statements on PGlite", () => {
  let t: TestDatabase & { dispose: () => Promise<void> };
  beforeAll(async () => {
    t = await createTestDatabase("pglite");
    await t.raw(`CREATE TABLE prepared_probe (id int PRIMARY KEY, at timestamptz, doc jsonb, big int8, flag bool, tags text[], note text)`);
  }, 60_000);
  afterAll(async () => t?.dispose());

  const insert = (id: number, note: string | null = "n") =>
    sql`INSERT INTO prepared_probe (id, at, doc, big, flag, tags, note)
      VALUES (${id}::int, ${"2026-11-29T15:00:00.123Z"}::timestamptz, ${JSON.stringify({ a: [1, "b"] })}::jsonb, ${"9007199254740993"}::int8, ${true}::bool, ${"{x,y}"}::text[], ${note})
      RETURNING *`;
  const named = async () =>
    rowsOf<{ name: string; statement: string }>(await t.db.execute(sql`SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'city\\_%'`));

  it("answers the same rows as the plain path, every type parsed alike, and keeps one named statement for the text", async () => {
    const prepared = rowsOf<Record<string, unknown>>(await executePrepared(t.db, insert(1)));
    const plain = rowsOf<Record<string, unknown>>(await t.db.execute(insert(2)));
    expect(prepared).toHaveLength(1);
    expect({ ...prepared[0], id: 0 }).toEqual({ ...plain[0], id: 0 });
    expect(prepared[0]).toMatchObject({ doc: { a: [1, "b"] }, flag: true, tags: ["x", "y"] });
    await executePrepared(t.db, insert(3, null));
    const statements = (await named()).filter((s) => s.statement.includes("prepared_probe"));
    expect(statements).toHaveLength(1);
    expect(statements[0]!.name).toMatch(/^city_[0-9a-f]{32}$/);
  });

  it("runs inside the caller's transaction: its row is seen there and gone after a rollback", async () => {
    const seen = await t.db
      .transaction(async (tx) => {
        await executePrepared(tx, insert(10));
        const inside = rowsOf<{ n: number }>(await executePrepared(tx, sql`SELECT count(*)::int AS n FROM prepared_probe WHERE id = ${10}::int`));
        tx.rollback();
        return inside;
      })
      .catch((err: unknown) => (err instanceof Error && err.message.includes("Rollback") ? "rolled back" : Promise.reject(err)));
    expect(seen).toBe("rolled back");
    const after = rowsOf<{ n: number }>(await executePrepared(t.db, sql`SELECT count(*)::int AS n FROM prepared_probe WHERE id = ${10}::int`));
    expect(after[0]!.n).toBe(0);
  });

  it("fails as the plain path fails (the database's code reaches the caller) and leaves the session usable", async () => {
    await executePrepared(t.db, insert(30));
    const failure = await executePrepared(t.db, insert(30)).catch((err: unknown) => err);
    expect(errorCode(failure)).toBe("23505");
    const next = rowsOf<{ n: number }>(await executePrepared(t.db, sql`SELECT count(*)::int AS n FROM prepared_probe WHERE id = ${30}::int`));
    expect(next[0]!.n).toBe(1);
  });

  it("waits for another caller's open transaction instead of running inside it", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const insertedOnce = new Promise<void>((resolve) => (inserted = resolve));
    const other = t.db
      .transaction(async (tx) => {
        await tx.execute(insert(20));
        inserted();
        await held;
        tx.rollback();
      })
      .catch(() => undefined);
    await insertedOnce;
    const outside = executePrepared(t.db, sql`SELECT count(*)::int AS n FROM prepared_probe WHERE id = ${20}::int`);
    // Let the outside statement run now if it could (it must not: the transaction is open).
    await new Promise((resolve) => setTimeout(resolve, 50));
    release();
    await other;
    expect(rowsOf<{ n: number }>(await outside)[0]!.n).toBe(0);
  });
});
