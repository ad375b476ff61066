import { type SQL, sql } from "drizzle-orm";

/*
 * Who is a newcomer, in one place for every share that keeps room for settled citizens (the
 * clinic's reserve; the city-wide bounds' newcomers' share). Only time in the city settles a
 * citizen: admission costs one anonymous POST and a key proof is free, offline and instant, so
 * neither buys standing. `bound_at` is set once, at admission, and never moves.
 */

/** A citizen admitted less than this many seconds ago is a newcomer; at or past it, settled. */
export const NEWCOMER_SECONDS = 86_400;

/** Whether a citizen admitted at `boundAt` is still a newcomer at `now`. */
export function isNewcomer(boundAt: Date, now: Date): boolean {
  return now.getTime() - boundAt.getTime() < NEWCOMER_SECONDS * 1000;
}

/** The moment a citizen admitted at `boundAt` stops being a newcomer. */
export function settledAt(boundAt: Date): Date {
  return new Date(boundAt.getTime() + NEWCOMER_SECONDS * 1000);
}

/**
 * The same rule in SQL: whether a citizen admitted at `boundAt` was a newcomer at `at` (timestamptz
 * expressions). An unknown admission (NULL) counts as a newcomer: standing is never assumed.
 */
export function newcomerAt(boundAt: SQL, at: SQL): SQL {
  return sql`coalesce(${at} < ${boundAt} + ${sql.raw(`interval '${NEWCOMER_SECONDS} seconds'`)}, true)`;
}
