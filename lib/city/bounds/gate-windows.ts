import { type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { sha256 } from "@noble/hashes/sha2.js";
import { utf8ToBytes } from "@noble/hashes/utils.js";
import { type Slot, type Window } from "./rate-buckets";
import { slotColumns, slotOf, sweepWindowsSql, takeCtes } from "./rate";
import { stripesJsonSql, stripesRetryAfter, stripesRoomSql } from "./rate-stripes";

/**
 * The gate's windows counted as one chain: the per-subject windows (the
 * client address, the named origin) in order, each only when the one before let it through, then
 * the city-wide ceiling, only when all of them did. So whatever takes a stripe of the ceiling
 * (rate-stripes.ts: a row lock held to its commit, shared with no parallel admission while a stripe
 * is free) was counted against its own address and origin first. And a presentation the ceiling refuses spends and stores nothing per subject: the chain
 * starts only when the ceiling, read in the same statement, has room; when a parallel admission
 * took the last slot meanwhile, the per-subject takes are undone (undoTakes) before the answer.
 */

/**
 * Scopes whose subject is text the client chooses (an address it sends from, its /24 or /48, an
 * origin it names): their rows are bounded city-wide (Chain.subjectsMax), overflow buckets aside.
 */
export const CLIENT_KEYED_SCOPES = [
  "gate-prefix",
  "gate-address",
  "gate-admissions-prefix",
  "gate-admissions-host",
  "gate-bids-prefix",
  "gate-origin",
] as const;

/**
 * Counted subjects never refuse the uncounted (issue 43): when the table holds `subjectsMax` rows
 * of CLIENT_KEYED_SCOPES, a subject that has no row yet is stored nowhere new: it is counted in one
 * of OVERFLOW_BUCKETS fixed rows of its scope (subject `overflow/<n>`, n from SHA-256 of the
 * subject), whose limit is OVERFLOW_FACTOR times the window's. So a full table refuses nobody for
 * being full; a new source then shares a bounded bucket with the few others hashed to it, and at
 * most OVERFLOW_BUCKETS rows per scope are ever added past the bound.
 */
export const OVERFLOW_BUCKETS = 64;
export const OVERFLOW_FACTOR = 4;
const OVERFLOW_PREFIX = "overflow/";

/** The overflow bucket a subject of a window is counted in when the table is full. */
export function overflowWindow(window: Window): Window {
  const n = new DataView(sha256(utf8ToBytes(`${window.scope}|${window.subject}`)).buffer).getUint32(0) % OVERFLOW_BUCKETS;
  return { ...window, subject: `${OVERFLOW_PREFIX}${n}`, limit: window.limit * OVERFLOW_FACTOR };
}

export interface Chain {
  /** Per-subject windows, counted in this order, each only when the one before let it through. */
  windows: Window[];
  /** The city-wide ceiling, counted last; null: none (off, or not this presentation's). */
  ceiling: Window | null;
  /** At most this many rows of CLIENT_KEYED_SCOPES, city-wide: a new subject past it is counted in an overflow bucket. */
  subjectsMax: number;
  /** A condition on the statement's other CTEs (a scalar boolean) the whole chain waits for. */
  when?: SQL;
  /**
   * Scopes that count every attempt whatever a later window says (a source's presentations). Set, a
   * refusal by a window gives back what the windows before it took of every other scope (settle),
   * so a refused attempt spends no share; unset, what they took stays counted.
   */
  keeps?: readonly string[];
  /**
   * The ceiling as this presentation would take it with a proof-of-work bid (docs/pow.md: its reach,
   * and for a keyless one its steps); unset: it bids already, or a bid lifts nothing.
   */
  bidCeiling?: Window;
}

export type ChainOutcome =
  /** `rows`: the windows charged (an overflow bucket where one was), the ceiling's as the stripe it charged (what undoTakes gives back). */
  | { kind: "taken"; rows: Window[] }
  | { kind: "skipped" }
  /**
   * The ceiling was full (for this taker's reach): nothing spent per subject (undone when a parallel
   * taker won the last slot). `stripes`: its stripes as the statement read them (JSON), what the
   * suggested effort is read from (gate-pow.ts).
   */
  | { kind: "ceiling-full"; retryAfterSeconds: number; undo: Window[]; stripes: unknown }
  /** `undo`: what the windows before the refusing one took and give back (Chain.keeps). */
  | { kind: "refused"; window: Window; slot: Slot; undo: Window[] };

const name = (i: number) => `take_${i}`;
const isKeyed = (w: Window) => (CLIENT_KEYED_SCOPES as readonly string[]).includes(w.scope);

/**
 * The CTEs of a chain (for a WITH), the condition that every window of it let this one through
 * (false when any refused or the chain did not run), and the columns its outcome is read from.
 */
export function chainSql(chain: Chain, now: Date): { ctes: SQL; allTaken: SQL; columns: SQL } {
  const all = [...chain.windows, ...(chain.ceiling ? [chain.ceiling] : [])];
  const overflows = chain.windows.filter(isKeyed).map(overflowWindow);
  const ctes: SQL[] = [sql`rate_swept AS (${sweepWindowsSql(now, [...all, ...overflows])})`];
  const columns: SQL[] = [];
  const gates: string[] = [];
  if (chain.when) {
    ctes.push(sql`chain_when AS (SELECT coalesce(${chain.when}, false) AS ok)`);
    columns.push(sql.raw(`(SELECT ok FROM chain_when) AS chain_when`));
    gates.push("chain_when.ok");
  }
  if (chain.ceiling) {
    // The stripes' JSON is read only when there is no room (chainOutcome reads it only then): an
    // admission the ceiling lets through does not aggregate and parse its 32 stripes.
    ctes.push(sql`ceiling_room AS (${stripesRoomSql(chain.ceiling, now, { stripes: false })})`);
    columns.push(
      sql`(SELECT room FROM ceiling_room) AS ceiling_room, CASE WHEN (SELECT room FROM ceiling_room) THEN NULL ELSE ${stripesJsonSql(chain.ceiling, now)} END AS ceiling_stripes`,
    );
    gates.push("ceiling_room.room");
  }
  if (overflows.length) {
    // Whether the table has room for a new subject's row (overflow rows aside), read only when a
    // subject has none (an OR is evaluated left to right and stops at true): the rows as counted by
    // migration 0056's triggers on 16 stripes, not a count of the table (4 to 10 ms at 19,000 rows).
    ctes.push(sql`subjects_room AS (SELECT coalesce((SELECT sum(n) FROM counted_subjects), 0) < ${chain.subjectsMax}::int AS room)`);
  }
  const first = gates.length ? sql.raw(`FROM ${gates.map((g) => g.split(".")[0]).join(", ")} WHERE ${gates.join(" AND ")}`) : sql``;
  all.forEach((w, i) => {
    const source = i === 0 ? first : sql.raw(`FROM ${name(i - 1)} WHERE ${name(i - 1)}.allowed`);
    if (!isKeyed(w) || w.stripes) {
      ctes.push(takeCtes(name(i), w, now, source));
    } else {
      // Its own row when it has one or the table has room, else its overflow bucket.
      const over = overflowWindow(w);
      const own = sql.raw(`${name(i)}_own`);
      ctes.push(sql`${own} AS (SELECT EXISTS (SELECT 1 FROM rate_windows WHERE scope = ${w.scope} AND subject = ${w.subject})
        OR (SELECT room FROM subjects_room) AS ok)`);
      const chosen = {
        subject: sql`(CASE WHEN (SELECT ok FROM ${own}) THEN ${w.subject} ELSE ${over.subject} END)`,
        limit: sql`(CASE WHEN (SELECT ok FROM ${own}) THEN ${w.limit}::int ELSE ${over.limit}::int END)`,
      };
      ctes.push(takeCtes(name(i), w, now, source, chosen));
    }
    columns.push(slotColumns(name(i)));
  });
  const allTaken = all.length
    ? sql.raw(all.map((_, i) => `coalesce((SELECT allowed FROM ${name(i)}), false)`).join(" AND "))
    : gates.length
      ? sql.raw(`coalesce((SELECT ${gates.join(" AND ")} FROM ${gates.map((g) => g.split(".")[0]).join(", ")}), false)`)
      : sql`true`;
  return { ctes: sql.join(ctes, sql`, `), allTaken, columns: sql.join(columns.length ? columns : [sql`1 AS chain_empty`], sql`, `) };
}

/** The window a take counted in: the chain's own, or its overflow bucket when the take's subject says so. */
function countedIn(row: Record<string, unknown>, i: number, window: Window): Window {
  if (!isKeyed(window)) return window;
  const over = overflowWindow(window);
  return row[`${name(i)}_subject`] === over.subject && over.subject !== window.subject ? over : window;
}

/** What a chain's statement did, read from its row (the columns of chainSql). */
export function chainOutcome(row: Record<string, unknown>, chain: Chain, now: Date): ChainOutcome {
  if (chain.when && row.chain_when !== true) return { kind: "skipped" };
  if (chain.ceiling && row.ceiling_room !== true) {
    return {
      kind: "ceiling-full",
      retryAfterSeconds: stripesRetryAfter(row.ceiling_stripes, chain.ceiling, now),
      undo: [],
      stripes: row.ceiling_stripes ?? null,
    };
  }
  const counted = chain.windows.map((w, i) => countedIn(row, i, w));
  for (const [i, window] of counted.entries()) {
    const slot = slotOf(row, name(i), window, now);
    if (slot && !slot.allowed) {
      const undo = chain.keeps ? counted.slice(0, i).filter((w) => !chain.keeps!.includes(w.scope)) : [];
      return { kind: "refused", window, slot, undo };
    }
  }
  if (!chain.ceiling) return { kind: "taken", rows: counted };
  const ceiling = name(chain.windows.length);
  const slot = slotOf(row, ceiling, chain.ceiling, now);
  // Its room was read a moment before its take: parallel admissions took the last slots meanwhile.
  if (slot && !slot.allowed)
    return { kind: "ceiling-full", retryAfterSeconds: slot.retryAfterSeconds, undo: counted, stripes: row[`${ceiling}_stripes`] ?? null };
  const stripe: Window = { ...chain.ceiling, subject: String(row[`${ceiling}_subject`]), stripes: undefined };
  return { kind: "taken", rows: [...counted, stripe] };
}

/** Counts a chain in a statement of its own (with nothing else): its outcome. */
export async function takeChain(db: Database, chain: Chain, now: Date): Promise<ChainOutcome> {
  const { ctes, columns } = chainSql(chain, now);
  const row = rowsOf<Record<string, unknown>>(await db.execute(sql`WITH ${ctes} SELECT ${columns}`))[0]!;
  return settle(db, chainOutcome(row, chain, now), now);
}

/** Undoes what a refused chain spent per subject (see undoTakes), then answers its outcome. */
export async function settle(db: Database, outcome: ChainOutcome, now: Date): Promise<ChainOutcome> {
  if ((outcome.kind === "ceiling-full" || outcome.kind === "refused") && outcome.undo.length) await undoTakes(db, outcome.undo);
  return outcome;
}

/**
 * Takes back the attempt this transaction counted in each window (one statement; a city-wide
 * window as the stripe it charged: ChainOutcome's `rows`): one less in the row's newest bucket,
 * where the take counted it. The transaction holds each row's lock since its take, so no other
 * attempt came in between. A row that holds nothing else is deleted (it was new: the client-keyed
 * rows' count is as it was), but a stripe, which stays.
 */
export async function undoTakes(db: Database, windows: readonly Window[]): Promise<void> {
  if (!windows.length) return;
  const keys = sql.join(
    windows.map((w) => sql`(${w.scope}::text, ${w.subject}::text)`),
    sql`, `,
  );
  const alone = sql`(expires_at < 'infinity' AND (SELECT sum(c) FROM unnest(counts) AS c) = 1)`;
  await db.execute(sql`
    WITH gone AS (DELETE FROM rate_windows WHERE (scope, subject) IN (${keys}) AND ${alone})
    UPDATE rate_windows SET counts = ARRAY[counts[1] - 1] || counts[2:]
    WHERE (scope, subject) IN (${keys}) AND counts[1] > 0 AND NOT ${alone}`);
}
