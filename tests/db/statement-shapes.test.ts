import { type SQL, sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { describe, expect, it } from "vitest";
import { citizens, wardNotes } from "@/db/schema";
import { shapeOf, StatementTexts } from "@/db/statement-shapes";
import { type Chain, chainSql, cityWindow, withReach } from "@/lib/city/bounds";

/**
 * Statement texts kept per shape (db/statement-shapes.ts): whatever order statements come in, what
 * is sent is exactly drizzle's own build of that statement (the oracle: a dialect of its own), a
 * kept text is reused only for a statement of its shape, and anything the walk cannot read is
 * built whole every time.
 */
const oracle = new PgDialect();
const NOW = new Date("2026-11-29T21:00:00.000Z");
const nameOf = (text: string) => `n${text.length}`;

/** The gate's admission chain (gate-windows.ts) as a presentation of `i` would count it. */
function chain(i: number, options: { ceiling?: boolean; host?: boolean; reach?: number; when?: boolean } = {}): Chain {
  const ceiling = options.ceiling === false ? null : withReach(cityWindow("gate-admissions", 1000 + i, 3600), options.reach ?? 900);
  return {
    windows: [
      { scope: "gate-address", subject: `10.0.${i}.1`, limit: 30, windowSeconds: 3600 },
      ...(options.host ? [{ scope: "gate-admissions-host", subject: `2001:db8:${i}::/64`, limit: 5 + i, windowSeconds: 3600 }] : []),
      { scope: "gate-origin", subject: `origin-${i}.example`, limit: 30, windowSeconds: 3600 },
    ],
    ceiling,
    subjectsMax: 100_000 + i,
    ...(options.when ? { when: sql`(SELECT count(*) FROM spent) = ${1}` } : {}),
  };
}

function admission(c: Chain, name: string): SQL {
  const windows = chainSql(c, NOW);
  return sql`WITH held AS (SELECT did FROM ${citizens} WHERE name = ${name} LIMIT 1), ${windows.ctes}
    SELECT held.*, ${windows.columns}, CASE WHEN ${windows.allTaken} THEN nextval('bed_numbers')::text END AS bed_number
    FROM (SELECT 1) one LEFT JOIN held ON true`;
}

/** Sends every statement through one cache, in order: each must come out as drizzle builds it. */
function sendAll(texts: StatementTexts, statements: SQL[]): boolean[] {
  return statements.map((statement) => {
    const sent = texts.textOf(statement, (s) => oracle.sqlToQuery(s), nameOf);
    const built = oracle.sqlToQuery(statement);
    expect(sent.query.sql).toBe(built.sql);
    expect(sent.query.params).toEqual(built.params);
    expect(sent.name).toBe(nameOf(built.sql));
    return sent.reused;
  });
}

describe("statement texts kept per shape", () => {
  it("sends the admission's statements exactly as drizzle builds them, reusing a text only for its own shape", () => {
    const shapes = [
      (i: number) => chain(i),
      (i: number) => chain(i, { host: true }),
      (i: number) => chain(i, { ceiling: false }),
      (i: number) => chain(i, { when: true }),
      (i: number) => chain(i, { reach: 1000 + i, host: true, when: true }),
    ];
    const texts = new StatementTexts();
    // Every shape three times, interleaved, with other values each time.
    const statements = [0, 1, 2].flatMap((round) => shapes.map((shape, s) => admission(shape(round * 10 + s), `name-${round}-${s}`)));
    const reused = sendAll(texts, statements);
    expect(reused).toEqual([...shapes.map(() => false), ...shapes.map(() => true), ...shapes.map(() => true)]);
    expect(texts.size).toBe(shapes.length);
    // The admission's statement is large: its text is kept, its ~150 values are not (the ceiling's
    // stripes travel as five arrays, not as five values a stripe).
    expect(oracle.sqlToQuery(statements[0]!).params.length).toBeGreaterThan(100);
  });

  it("tells apart statements whose text differs only where a value sits, in raw text, or in a table", () => {
    const texts = new StatementTexts();
    const statements = [
      sql`SELECT ${1} + 2`,
      sql`SELECT 1 + ${2}`,
      sql`SELECT ${1} + ${2}`,
      sql`SELECT ${sql.raw("5")} + ${2}`,
      sql`SELECT ${sql.raw("3")} + ${2}`,
      sql`SELECT count(*) FROM ${citizens} WHERE ${1} = 1`,
      sql`SELECT count(*) FROM ${wardNotes} WHERE ${1} = 1`,
      sql`SELECT count(*) FROM ${citizens} WHERE ${citizens.name} = ${"a"}`,
      sql`SELECT count(*) FROM ${citizens} WHERE ${citizens.origin} = ${"a"}`,
      // undefined is no value (empty text); null is one.
      sql`SELECT 1 ${undefined}`,
      sql`SELECT 1 ${null}`,
      // The same pieces cut elsewhere are one text, so one shape.
      sql`SELECT ${sql`1 +`} ${2}`,
      sql`SELECT 1 + ${3}`,
    ];
    const reused = sendAll(texts, statements);
    expect(reused).toEqual([false, false, false, false, false, false, false, false, false, false, false, true, true]);
  });

  it("builds whole, every time, what its walk cannot read as drizzle does (a Param, a Date, an array, inlined values)", () => {
    const date = new Date("2026-01-01T00:00:00Z");
    const unreadable = [
      () => sql`SELECT ${sql.param(1)}`,
      () => sql`SELECT ${date}::timestamptz`,
      () => sql`SELECT 1 IN ${[1, 2]}`,
      () => sql`SELECT ${1}`.inlineParams(),
      () => sql`SELECT ${sql`${2}`.inlineParams()}`,
    ];
    for (const make of unreadable) expect(shapeOf(make())).toBeNull();
    const texts = new StatementTexts();
    expect(sendAll(texts, [...unreadable.map((make) => make()), ...unreadable.map((make) => make())]).some(Boolean)).toBe(false);
    expect(texts.size).toBe(0);
  });

  it("never keeps a shape whose gathered values are not drizzle's", () => {
    const texts = new StatementTexts();
    // A builder that disagrees with the walk (as drizzle would if it read a chunk otherwise): never kept.
    const skewed = (s: SQL) => ({ ...oracle.sqlToQuery(s), params: [...oracle.sqlToQuery(s).params, "extra"] });
    const first = texts.textOf(sql`SELECT ${1}`, skewed, nameOf);
    const second = texts.textOf(sql`SELECT ${2}`, skewed, nameOf);
    expect([first.reused, second.reused]).toEqual([false, false]);
    expect(second.query.params).toEqual([2, "extra"]);
  });

  it("starts over past its bound of shapes (a text spliced where a value belongs is not kept forever)", () => {
    const texts = new StatementTexts(4);
    for (let i = 0; i < 10; i++) sendAll(texts, [sql`SELECT ${sql.raw(String(i))}, ${i}`]);
    expect(texts.size).toBeLessThanOrEqual(4);
    expect(texts.size).toBeGreaterThan(0);
  });
});
