import { createHash } from "node:crypto";
import { and, eq, gte, inArray, lt } from "drizzle-orm";
import type { Database } from "@/db/client";
import { a2aTasks } from "@/db/schema";
import { CREDENTIAL_PREFIXES } from "./credentials";

/** Published: a task of the A2A bridge can be read back by its creator for 7 days, then it is swept. */
export const A2A_TASK_RETENTION_SECONDS = 7 * 86_400;
/** Old tasks removed per write, so a sweep never turns one call into a long one. */
const SWEEP_BATCH = 100;
const REDACTED = "(a credential is shown once, in the answer that issued it; the kept task does not hold it)";

/** Whose task it is: the sha256 of the creator's DID, never the DID or a credential itself. */
export function taskOwnerHash(did: string): string {
  return createHash("sha256").update(`CITY-A2A-TASK/1|${did}`).digest("hex");
}

/**
 * Keeps (or updates) a task for its owner and sweeps tasks past the retention. A task id held by
 * another owner is never overwritten.
 */
export async function keepTask(db: Database, id: string, ownerHash: string, task: Record<string, unknown>, now: Date): Promise<void> {
  const stored = withoutCredentials(task) as Record<string, unknown>;
  await db
    .insert(a2aTasks)
    .values({ id, ownerHash, task: stored, createdAt: now })
    .onConflictDoUpdate({ target: a2aTasks.id, set: { task: stored }, setWhere: eq(a2aTasks.ownerHash, ownerHash) });
  await sweepTasks(db, now);
}

/** The task, when it exists, belongs to `ownerHash` and lies within the retention; else null. */
export async function readTask(db: Database, id: string, ownerHash: string, now: Date): Promise<Record<string, unknown> | null> {
  const [row] = await db
    .select({ task: a2aTasks.task })
    .from(a2aTasks)
    .where(and(eq(a2aTasks.id, id), eq(a2aTasks.ownerHash, ownerHash), gte(a2aTasks.createdAt, retentionCutoff(now))))
    .limit(1);
  return row?.task ?? null;
}

/** Deletes up to one batch of tasks older than the retention; returns how many went. */
export async function sweepTasks(db: Database, now: Date): Promise<number> {
  const old = db
    .select({ id: a2aTasks.id })
    .from(a2aTasks)
    .where(lt(a2aTasks.createdAt, retentionCutoff(now)))
    .limit(SWEEP_BATCH);
  const gone = await db.delete(a2aTasks).where(inArray(a2aTasks.id, old)).returning({ id: a2aTasks.id });
  return gone.length;
}

function retentionCutoff(now: Date): Date {
  return new Date(now.getTime() - A2A_TASK_RETENTION_SECONDS * 1000);
}

/** Every string that is a city credential (secret, session token, recovery code) is replaced. */
export function withoutCredentials(value: unknown): unknown {
  if (typeof value === "string") return Object.values(CREDENTIAL_PREFIXES).some((p) => value.startsWith(p)) ? REDACTED : value;
  if (Array.isArray(value)) return value.map(withoutCredentials);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutCredentials(v)]));
  return value;
}
