import { AsyncLocalStorage } from "node:async_hooks";
import type { Logger } from "drizzle-orm/logger";

/**
 * Benchmark only (CITY_COUNT_QUERIES=1): counts the statements each request sends to the
 * database. The hook is Drizzle's logger, which every driver calls once per statement it sends,
 * so the count is measured, not estimated. On pg and Neon a transaction's BEGIN and COMMIT are
 * statements too; PGlite's transaction runs them inside the engine, so they are not counted there.
 */
// One store per process, not per module instance: the build may load this module in more than
// one chunk, and the database (opened once per process, lib/city/database.ts) keeps the logger of
// the instance that opened it, while a route counts with its own (X-City-Queries read 0 then).
const holder = globalThis as typeof globalThis & { __cityQueryCounters?: AsyncLocalStorage<{ queries: number }> };
const counters = (holder.__cityQueryCounters ??= new AsyncLocalStorage<{ queries: number }>());

export const queryCounter: Logger = {
  logQuery() {
    const counter = counters.getStore();
    if (counter) counter.queries += 1;
  },
};

/** Runs `work` and reports how many statements it sent. */
export async function countingQueries<T>(work: () => Promise<T>): Promise<{ value: T; queries: number }> {
  const counter = { queries: 0 };
  const value = await counters.run(counter, work);
  return { value, queries: counter.queries };
}
