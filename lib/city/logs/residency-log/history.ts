import { sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";

/** One UTC day of the residency log: its events, and the beds held at its end. */
export interface ResidencyDay {
  day: string;
  admits: number;
  exits: number;
  returns: number;
  exports: number;
  /** Beds held at the end of the day by the log's account: admit and return take one, exit frees one, export frees one only from a bed. */
  occupancy: number;
}

const DAY_MS = 86_400_000;

/**
 * The city over time, drawn from the residency log alone: the last `days` UTC days up to `now`,
 * oldest first, every day present (a quiet day is zeros with the occupancy carried over).
 */
export async function readResidencyDays(db: Database, options: { days: number; now: Date }): Promise<ResidencyDay[]> {
  const result = await db.execute(sql`
    WITH moves AS (
      SELECT at, event,
        CASE
          WHEN event IN ('admit', 'return') THEN 1
          WHEN event = 'exit' THEN -1
          WHEN event = 'export' AND lag(event) OVER (PARTITION BY did ORDER BY seq) IN ('admit', 'return') THEN -1
          ELSE 0
        END AS beds
      FROM residency_log
    ), days AS (
      SELECT (at AT TIME ZONE 'UTC')::date AS day,
        count(*) FILTER (WHERE event = 'admit')::int AS admits,
        count(*) FILTER (WHERE event = 'exit')::int AS exits,
        count(*) FILTER (WHERE event = 'return')::int AS returns,
        count(*) FILTER (WHERE event = 'export')::int AS exports,
        sum(beds)::int AS beds
      FROM moves GROUP BY 1
    )
    SELECT to_char(day, 'YYYY-MM-DD') AS day, admits, exits, returns, exports, (sum(beds) OVER (ORDER BY day))::int AS occupancy
    FROM days ORDER BY day`);
  const byDay = new Map(rowsOf<ResidencyDay>(result).map((r) => [r.day, r]));
  const firstDay = Date.UTC(options.now.getUTCFullYear(), options.now.getUTCMonth(), options.now.getUTCDate()) - (options.days - 1) * DAY_MS;
  const firstKey = new Date(firstDay).toISOString().slice(0, 10);
  let occupancy = 0;
  for (const row of byDay.values()) if (row.day < firstKey) occupancy = row.occupancy;
  return Array.from({ length: options.days }, (_, i) => {
    const day = new Date(firstDay + i * DAY_MS).toISOString().slice(0, 10);
    const row = byDay.get(day);
    if (row) occupancy = row.occupancy;
    return { day, admits: row?.admits ?? 0, exits: row?.exits ?? 0, returns: row?.returns ?? 0, exports: row?.exports ?? 0, occupancy };
  });
}
