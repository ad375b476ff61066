import { eq } from "drizzle-orm";
import type { Database } from "@/db/client";
import { citizens } from "@/db/schema";
import { type PeerRow, peerRow } from "./directory";
import { type PublishedLogRow, residencyLog } from "@/lib/city/logs/residency-log";

/** The most residency log rows a citizen's page shows, newest first; the whole history is the log. */
export const RESIDENCY_ROWS = 50;

/**
 * One citizen as the plat shows it at /peers/{did}: what the directory publishes of it (its row),
 * its tier, and its residency log rows, newest first. A DID no citizen holds is `unknown`; an
 * exported citizen is `exported` and nothing else (the directory no longer lists it).
 */
export type CitizenProfile =
  { state: "unknown" } | { state: "exported" } | { state: "listed"; peer: PeerRow; tier: string; residency: PublishedLogRow[]; since: PublishedLogRow | null };

export async function readCitizenProfile(db: Database, did: string, now: Date, limit = RESIDENCY_ROWS): Promise<CitizenProfile> {
  if (!/^[0-9a-f]{64}$/.test(did)) return { state: "unknown" };
  // One statement at a time: a caller may hand a transaction, which is one connection.
  const [row] = await db.select().from(citizens).where(eq(citizens.did, did));
  if (!row) return { state: "unknown" };
  if (row.residencyStatus === "exported") return { state: "exported" };
  const residency = await residencyLog.readCitizenRows(db, did, limit);
  return { state: "listed", peer: peerRow(row, now), tier: row.tier, residency, since: sinceRow(residency, row.residencyStatus) };
}

/**
 * The row its present state dates from: the newest exit while away, the newest admit or return
 * while bound. Null when the page's rows hold none (a log older than the rows read).
 */
function sinceRow(newestFirst: readonly PublishedLogRow[], status: string): PublishedLogRow | null {
  const events = status === "away" ? ["exit"] : ["admit", "return"];
  return newestFirst.find((r) => events.includes(r.event)) ?? null;
}
