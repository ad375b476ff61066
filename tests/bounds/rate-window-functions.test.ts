import { sql } from "drizzle-orm";
import { expect, it } from "vitest";
import { rowsOf } from "@/db/sql";
import { describeOnDatabases } from "../support/databases";

/*
 * The SQL of a rate window's buckets (migration 0048): rate_window_shift and rate_window_at give
 * what the bucket arithmetic says (the counts d buckets later: each moves d places older, the
 * oldest fall off; another bucket length: every attempt in the newest bucket), and they are plain
 * expressions the planner puts in place, not functions that run a query of their own on every
 * call (about 100 calls per admission made those the largest share of its database CPU).
 */

/** The reference: the counts `d` buckets later, as lib/city/bounds/rate-buckets.ts counts them. */
function shifted(counts: number[], d: number): number[] {
  const by = Math.max(0, Math.min(d, counts.length));
  return [...Array<number>(by).fill(0), ...counts.slice(0, counts.length - by)];
}

describeOnDatabases("rate window functions", (t) => {
  it("shift a window's counts exactly as the bucket arithmetic does, for every distance", async () => {
    const windows = [[], [5], [1, 2, 3], [3, 0, 0, 7, 1, 0, 0, 0, 2, 0, 0, 0, 4]];
    const distances = [-20_000_000_000, -3, -1, 0, 1, 2, 3, 12, 13, 14, 1_000, 20_000_000_000];
    for (const counts of windows) {
      for (const d of distances) {
        const [row] = rowsOf<{ shifted: number[] | string; at: number[] | string }>(
          await t().db.execute(
            sql`SELECT rate_window_shift(${`{${counts.join(",")}}`}::int[], ${d}::bigint) AS shifted,
              rate_window_at(${`{${counts.join(",")}}`}::int[], 100::bigint, 5000::bigint, ${100 + d}::bigint, 5000::bigint) AS at`,
          ),
        );
        const expected = shifted(counts, d);
        expect(asNumbers(row!.shifted), `shift {${counts}} by ${d}`).toEqual(expected);
        expect(asNumbers(row!.at), `at {${counts}} ${d} buckets on`).toEqual(expected);
      }
    }
  });

  it("count every attempt in the newest bucket when the window's bucket length changed", async () => {
    const [row] = rowsOf<{ at: number[] | string }>(
      await t().db.execute(sql`SELECT rate_window_at('{3,0,2,1}'::int[], 100::bigint, 5000::bigint, 107::bigint, 300000::bigint) AS at`),
    );
    expect(asNumbers(row!.at)).toEqual([6, 0, 0, 0]);
  });

  it("are inlined by the planner: no call of them is left in a plan that uses them", async () => {
    const plan = rowsOf<Record<string, string>>(
      await t().db.execute(
        sql`EXPLAIN (VERBOSE, COSTS OFF) SELECT (SELECT coalesce(sum(c), 0) FROM unnest(rate_window_at(w.counts, w.bucket, w.bucket_ms, 7::bigint, 300000::bigint)) AS c)
          FROM rate_windows w`,
      ),
    )
      .map((r) => Object.values(r)[0])
      .join("\n");
    expect(plan).toContain("array_fill");
    expect(plan).not.toMatch(/rate_window_(at|shift)\(/);
  });
});

function asNumbers(value: number[] | string): number[] {
  if (Array.isArray(value)) return value.map(Number);
  return value.replace(/[{}]/g, "").split(",").filter(Boolean).map(Number);
}
