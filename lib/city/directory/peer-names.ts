import { inArray } from "drizzle-orm";
import type { Database } from "@/db/client";
import { citizens } from "@/db/schema";

/**
 * The directory names of the citizens behind some DIDs, for pages that show DIDs (log rows, signed
 * ward notes): one statement. Only citizens the directory lists (bound or away) are named; an
 * exported citizen, like a DID that names no citizen, is left out, as the directory leaves it out.
 */
export async function peerNames(db: Database, dids: readonly (string | null)[]): Promise<Map<string, string>> {
  const wanted = [...new Set(dids.filter((d): d is string => d !== null && /^[0-9a-f]{64}$/.test(d)))];
  if (wanted.length === 0) return new Map();
  const rows = await db
    .select({ did: citizens.did, name: citizens.name, status: citizens.residencyStatus })
    .from(citizens)
    .where(inArray(citizens.did, wanted));
  return new Map(rows.filter((r) => r.status !== "exported").map((r) => [r.did, r.name]));
}
