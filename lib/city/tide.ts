import { gt, min } from "drizzle-orm";
import type { Database } from "@/db/client";
import { residencyLog } from "@/db/schema";

export const TIDE_WINDOW_MS = 86_400_000;

/**
 * When the census's tide (log rows of the last 24 hours) next changes with no write: the oldest
 * row it counts at `now` leaves the window. Null when it counts none (only a write can raise it).
 */
export async function tideChangesAt(db: Database, now: Date): Promise<Date | null> {
  const [row] = await db
    .select({ oldest: min(residencyLog.at) })
    .from(residencyLog)
    .where(gt(residencyLog.at, new Date(now.getTime() - TIDE_WINDOW_MS)));
  return row?.oldest ? new Date(row.oldest.getTime() + TIDE_WINDOW_MS) : null;
}
