import { PGlite } from "@electric-sql/pglite";
import { Pool as NeonPool } from "@neondatabase/serverless";
import { NeonPreparedQuery } from "drizzle-orm/neon-serverless";
import { NodePgPreparedQuery } from "drizzle-orm/node-postgres";
import { PglitePreparedQuery } from "drizzle-orm/pglite";
import pg from "pg";

type Prepared = { prototype: Record<string, unknown> };
const PREPARED: Prepared[] = [NodePgPreparedQuery, NeonPreparedQuery, PglitePreparedQuery] as unknown as Prepared[];

/**
 * Watches every statement Drizzle sends on each driver and counts the times a statement starts on
 * a transaction's connection while another is still in flight there (Promise.all over one
 * transaction handle). Statements on a pool or on PGlite itself are not a transaction's and are
 * not counted: they may run side by side.
 */
export function watchTransactionConnections(): { overlaps: () => number; reset: () => void; restore: () => void } {
  const inFlight = new WeakMap<object, number>();
  let overlaps = 0;
  const restores: (() => void)[] = [];
  const isTransactionConnection = (client: object) => !(client instanceof pg.Pool || client instanceof NeonPool || client instanceof PGlite);
  for (const prepared of PREPARED) {
    for (const method of ["execute", "all"]) {
      const original = prepared.prototype[method] as (...args: unknown[]) => Promise<unknown>;
      prepared.prototype[method] = async function (this: { client: object }, ...args: unknown[]) {
        const client = this.client;
        if (!isTransactionConnection(client)) return original.apply(this, args);
        const running = inFlight.get(client) ?? 0;
        if (running > 0) overlaps += 1;
        inFlight.set(client, running + 1);
        try {
          return await original.apply(this, args);
        } finally {
          inFlight.set(client, (inFlight.get(client) ?? 1) - 1);
        }
      };
      restores.push(() => (prepared.prototype[method] = original));
    }
  }
  return {
    overlaps: () => overlaps,
    reset: () => (overlaps = 0),
    restore: () => restores.splice(0).forEach((undo) => undo()),
  };
}
