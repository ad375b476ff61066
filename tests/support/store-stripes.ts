import { sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { rowsOf } from "@/db/sql";

/** A store's counts as the tests read them: the sums of its stripes (the hour's only of stripes counted in this hour). */
export interface Counters {
  total: number;
  hour: number;
  newcomer: number;
}

export interface Bounds {
  total: number;
  perHour: number;
  newcomerPerHour: number;
  /** The newcomers' line of the total (migration 0051); unset: the total, as the 0044 signature of city_store_charge passes it. */
  newcomerTotal?: number;
}

/** A stripe's part of `amount` over `n` stripes, by the published rule: amount / n, one more for the first amount % n. */
export const part = (amount: number, n: number, k: number) => Math.floor(amount / n) + (k < amount % n ? 1 : 0);

export async function stripeCounters(db: Database, store: string): Promise<Counters> {
  const [row] = rowsOf<{ total: string; hour: string; newcomer: string }>(
    await db.execute(
      sql`SELECT sum(total_bytes) AS total, sum(CASE WHEN hour_start >= date_trunc('hour', now()) THEN hour_bytes ELSE 0 END) AS hour,
        sum(CASE WHEN hour_start >= date_trunc('hour', now()) THEN newcomer_bytes ELSE 0 END) AS newcomer FROM city_store_stripes WHERE store = ${store}`,
    ),
  );
  return { total: Number(row!.total), hour: Number(row!.hour), newcomer: Number(row!.newcomer) };
}

export interface Stripe {
  stripe: number;
  total: number;
  hour: number;
  newcomer: number;
  shareTotal: number;
  shareHour: number;
  shareNewcomer: number;
  boundTotal: number;
}

/** Every stripe of a store, in stripe order. */
export async function stripesOf(db: Database, store: string): Promise<Stripe[]> {
  return rowsOf<Record<string, string>>(
    await db.execute(sql`SELECT stripe, total_bytes, hour_bytes, newcomer_bytes, share_total, share_hour, share_newcomer, bound_total
      FROM city_store_stripes WHERE store = ${store} ORDER BY stripe`),
  ).map((r) => ({
    stripe: Number(r.stripe),
    total: Number(r.total_bytes),
    hour: Number(r.hour_bytes),
    newcomer: Number(r.newcomer_bytes),
    shareTotal: Number(r.share_total),
    shareHour: Number(r.share_hour),
    shareNewcomer: Number(r.share_newcomer),
    boundTotal: Number(r.bound_total),
  }));
}

/**
 * Sets a store's counts as a rebalanced store holds them (`spread`): the shares split from
 * `bounds`, every stripe with the same room (± 1 byte). `one` puts every byte on stripe 0 with the
 * shares never split, as migration 0044 leaves a store. The hour is the current one.
 */
export async function setStripeCounters(db: Database, store: string, c: Counters, bounds: Bounds, on: "spread" | "one" = "spread"): Promise<void> {
  const n = Number(rowsOf<{ n: string }>(await db.execute(sql`SELECT count(*) AS n FROM city_store_stripes WHERE store = ${store}`))[0]!.n);
  const spread = (bound: number, held: number, k: number) =>
    held <= bound ? part(bound, n, k) - part(bound - held, n, k) : part(bound, n, k) + part(held - bound, n, k);
  const line = bounds.newcomerTotal ?? bounds.total;
  const values = Array.from({ length: n }, (_, k) =>
    on === "one"
      ? `(${k}, ${k === 0 ? c.total : 0}, ${k === 0 ? c.hour : 0}, ${k === 0 ? c.newcomer : 0}, -1, -1, -1, 0, 0, 0, -1, 0)`
      : `(${k}, ${spread(bounds.total, c.total, k)}, ${spread(bounds.perHour, c.hour, k)}, ${spread(bounds.newcomerPerHour, c.newcomer, k)}, ${bounds.total}, ${bounds.perHour}, ${bounds.newcomerPerHour}, ${part(bounds.total, n, k)}, ${part(bounds.perHour, n, k)}, ${part(bounds.newcomerPerHour, n, k)}, ${line}, ${part(line, n, k)})`,
  );
  await db.execute(
    sql.raw(`UPDATE city_store_stripes s SET total_bytes = v.t, hour_bytes = v.h, newcomer_bytes = v.nb, hour_start = date_trunc('hour', now()),
      bound_total = v.bt, bound_hour = v.bh, bound_newcomer = v.bn, share_total = v.st, share_hour = v.sh, share_newcomer = v.sn,
      bound_newcomer_total = v.bnt, share_newcomer_total = v.snt
     FROM (VALUES ${values.join(", ")}) AS v(k, t, h, nb, bt, bh, bn, st, sh, sn, bnt, snt)
     WHERE s.store = '${store}' AND s.stripe = v.k`),
  );
}
