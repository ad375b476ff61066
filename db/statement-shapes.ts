import { Column, is, type Query, SQL, StringChunk, Table } from "drizzle-orm";

/*
 * A statement's text built once per shape (issue 42). Drizzle builds a statement's text and its
 * parameters together, on every call (SQL.toQuery): for the gate's admission, ~15 kB of text and
 * ~450 parameters merged level by level, on every request, although its text is always one of a
 * few. Here one walk of the statement's chunks gathers its parameters and its shape: the text with
 * a mark where each parameter goes (what the text is made of, whatever the values). The first
 * statement of a shape is built by drizzle and its text kept under that shape; a later one of the
 * same shape binds its own parameters to the kept text. Two statements of one shape have one text
 * by construction (their texts are made of the same pieces), so a kept text never serves another
 * shape; no caller names a shape.
 *
 * Only what the walk can read exactly as drizzle does is shaped: text, nested SQL, tables and
 * columns (named by the object, whose name is fixed), and plain values (each one parameter:
 * strings, numbers, booleans, bigints, null). Anything else (a Param with an encoder, a
 * placeholder, an array, a Date, an alias, a subquery, inlined parameters) makes the statement
 * unshaped: drizzle builds it whole, every time, as before.
 */

/** A statement's shape (see above) and its parameters in order; null when it holds a chunk the walk does not read. */
export interface Shaped {
  shape: string;
  params: unknown[];
}

/** Marks a parameter in a shape (PostgreSQL text never holds U+0000). */
const PARAM = "\u0000";
/** Frames an object's number in a shape (a table or a column). */
const OBJECT = "\u0001";

const objectIds = new WeakMap<object, number>();
let nextObjectId = 0;

function objectId(o: object): number {
  let id = objectIds.get(o);
  if (id === undefined) objectIds.set(o, (id = nextObjectId++));
  return id;
}

/** Whether drizzle inlines this SQL's values into its text (`.inlineParams()`; a private field of drizzle's). */
const inlines = (statement: SQL) => (statement as unknown as { shouldInlineParams: boolean }).shouldInlineParams;

export function shapeOf(statement: SQL): Shaped | null {
  const params: unknown[] = [];
  const pieces: string[] = [];
  const walk = (chunks: readonly unknown[]): boolean => {
    for (const chunk of chunks) {
      if (chunk === undefined) continue;
      if (chunk === null || (typeof chunk !== "object" && typeof chunk !== "function")) {
        params.push(chunk);
        pieces.push(PARAM);
      } else if (chunk instanceof StringChunk) {
        pieces.push(...chunk.value);
      } else if (chunk instanceof SQL) {
        if (inlines(chunk) || !walk(chunk.queryChunks)) return false;
      } else if (is(chunk, Table) || is(chunk, Column)) {
        pieces.push(OBJECT, String(objectId(chunk)), OBJECT);
      } else {
        return false;
      }
    }
    return true;
  };
  if (inlines(statement) || !walk(statement.queryChunks)) return null;
  return { shape: pieces.join(""), params };
}

/** A statement's text as drizzle built it for its shape, with the name it is prepared under. */
export interface KeptText {
  sql: string;
  name: string;
}

/** Shapes kept at most: the app has a few dozen; past this (text spliced in where a value belongs), the cache starts over. */
export const KEPT_SHAPES_MAX = 1024;

/**
 * Texts by shape. `build` is drizzle's own build of the statement (its text and parameters) and
 * `nameOf` names a text; both run once per shape. The first statement of a shape checks that its
 * walk gathered drizzle's very parameters; a shape whose parameters differ is never kept (its
 * statements are built whole).
 */
export class StatementTexts {
  private readonly kept = new Map<string, KeptText | "unshaped">();
  /** Statements built whole so far (a shape's first, and every unshaped one). */
  built = 0;

  constructor(private readonly max = KEPT_SHAPES_MAX) {}

  /** The text and parameters to send for `statement`, and its name. */
  textOf(statement: SQL, build: (statement: SQL) => Query, nameOf: (text: string) => string): { query: Query; name: string; reused: boolean } {
    const shaped = shapeOf(statement);
    const kept = shaped ? this.kept.get(shaped.shape) : "unshaped";
    if (kept && kept !== "unshaped") return { query: { sql: kept.sql, params: shaped!.params }, name: kept.name, reused: true };
    const query = build(statement);
    this.built += 1;
    const name = nameOf(query.sql);
    if (shaped && kept === undefined) {
      if (this.kept.size >= this.max) this.kept.clear();
      this.kept.set(shaped.shape, sameParams(shaped.params, query.params) ? { sql: query.sql, name } : "unshaped");
    }
    return { query, name, reused: false };
  }

  get size(): number {
    return this.kept.size;
  }
}

function sameParams(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
}
