import { createHash } from "node:crypto";
import { and, desc, eq, gte, inArray, lt, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { a2aTasks } from "@/db/schema";
import { CREDENTIAL_PREFIXES } from "@/lib/city/keys";
import { holdLock, type Charge, chargeSql, cityFull, newcomerSql, releaseSql, STORE_ROW_BYTES, citizenShare } from "@/lib/city/bounds";
import { LIMITS } from "@/lib/city/protocols";

/** Published: a task of the A2A bridge can be read back by its creator for 7 days, then it is swept. */
export const A2A_TASK_RETENTION_SECONDS = LIMITS.a2aTasks.retentionSeconds;
/** Published: the tasks kept per citizen; keeping one more removes that citizen's oldest. */
export const A2A_TASKS_PER_OWNER = LIMITS.a2aTasks.perCitizen;
/** Published: the most bytes (UTF-8 JSON) one kept task holds; a larger answer is not kept in it. */
export const A2A_TASK_MAX_BYTES = LIMITS.a2aTasks.bytesPerTask;
/** Old tasks removed per write, so a sweep never turns one call into a long one. */
const SWEEP_BATCH = 100;
const REDACTED = "(a credential is shown once, in the answer that issued it; the kept task does not hold it)";

/** Whose task it is: the sha256 of the creator's DID, never the DID or a credential itself. */
export function taskOwnerHash(did: string): string {
  return createHash("sha256").update(`CITY-A2A-TASK/1|${did}`).digest("hex");
}

/**
 * Keeps (or updates) a task for its owner and sweeps tasks past the retention. A task id held by
 * another owner is never overwritten. The kept task is bounded (keptForm), and the owner keeps at
 * most A2A_TASKS_PER_OWNER: in the same transaction, under the owner's lock, the oldest beyond go.
 */
export async function keepTask(
  db: Database,
  id: string,
  ownerHash: string,
  task: Record<string, unknown>,
  now: Date,
  did: string | null = null,
): Promise<void> {
  const stored = JSON.stringify(keptForm(task));
  await db.transaction(async (tx) => {
    await holdLock(tx as Database, `a2a-tasks:${ownerHash}`);
    // One statement: the task's bytes as stored (pg_column_size of its jsonb) are charged to the
    // city-wide store bound (an update charges the difference; lib/city/bounds/store-bounds.ts), and the
    // task is kept only from the charge. A task id held by another owner is neither charged nor kept.
    const foreign = sql`EXISTS (SELECT 1 FROM prev WHERE prev.owner_hash <> ${ownerHash})`;
    const charge: Charge = {
      store: "a2a_tasks",
      bytes: sql`pg_column_size(${stored}::jsonb) - coalesce((SELECT prev.bytes FROM prev WHERE prev.owner_hash = ${ownerHash}), -${STORE_ROW_BYTES}::int)`,
      newcomer: newcomerSql(did, now),
      now,
      // The caller's share: a citizen's, or (an unproven caller) its task owner's as a visitor's.
      subject: did ? citizenShare(did) : { id: `owner:${ownerHash}`, did: null },
    };
    const [row] = rowsOf<{ kept: number; foreign: boolean }>(
      await tx.execute(sql`
        WITH prev AS (SELECT owner_hash, bytes FROM a2a_tasks WHERE id = ${id}),
        charged AS (${chargeSql(charge, sql`WHERE NOT ${foreign}`)}),
        kept AS (
          INSERT INTO a2a_tasks (id, owner_hash, task, created_at, bytes)
          SELECT ${id}, ${ownerHash}, ${stored}::jsonb, ${now.toISOString()}::timestamptz, pg_column_size(${stored}::jsonb) FROM charged
          ON CONFLICT (id) DO UPDATE SET task = excluded.task, bytes = excluded.bytes WHERE a2a_tasks.owner_hash = excluded.owner_hash
          RETURNING 1)
        SELECT (SELECT count(*)::int FROM kept) AS kept, ${foreign} AS foreign`),
    );
    if (Number(row?.kept ?? 0) === 0 && row?.foreign !== true) {
      // The refusal reads the same difference without the statement's CTE.
      const previous = sql`(SELECT bytes FROM a2a_tasks WHERE id = ${id} AND owner_hash = ${ownerHash})`;
      throw await cityFull(tx as Database, { ...charge, bytes: sql`pg_column_size(${stored}::jsonb) - coalesce(${previous}, -${STORE_ROW_BYTES}::int)` });
    }
    await tx.execute(sql`
      WITH gone AS (
        DELETE FROM a2a_tasks WHERE id IN (
          SELECT id FROM a2a_tasks WHERE owner_hash = ${ownerHash}
          ORDER BY created_at DESC, id DESC OFFSET ${A2A_TASKS_PER_OWNER})
        RETURNING bytes)
      ${releaseSql("a2a_tasks", sql`(SELECT coalesce(sum(bytes + ${STORE_ROW_BYTES}::int), 0) FROM gone)`)}`);
  });
  await sweepTasks(db, now);
}

/**
 * What is kept of a task (its JSON form, Task.toJSON): no history (the caller's message is not kept, whatever it carried), no
 * credentials, and at most A2A_TASK_MAX_BYTES; an answer too large for that is replaced in the kept
 * task by a note (it was given once, in the answer to SendMessage).
 */
export function keptForm(task: Record<string, unknown>): Record<string, unknown> {
  const kept = withoutCredentials({ ...task, history: [] }) as Record<string, unknown>;
  if (bytesOf(kept) <= A2A_TASK_MAX_BYTES) return kept;
  const artifacts = Array.isArray(kept.artifacts) ? (kept.artifacts as Record<string, unknown>[]) : [];
  const trimmed = {
    ...kept,
    artifacts: artifacts.map((a) => ({
      ...a,
      parts: [{ text: TOO_LARGE, mediaType: "text/plain" }],
      metadata: { ...((a.metadata as Record<string, unknown>) ?? {}), "city/not-kept": true },
    })),
  };
  if (bytesOf(trimmed) > A2A_TASK_MAX_BYTES) throw new Error("a kept A2A task is over its bound even without its answer");
  return trimmed;
}

const TOO_LARGE = `The answer was over ${A2A_TASK_MAX_BYTES} bytes, the most a kept task holds: it was given once, in the answer to SendMessage. Call the skill again to read it.`;

/**
 * The least a kept task takes (issue 43, item 4): its note form (ids, status and the TOO_LARGE
 * note, with room for the envelope), not the largest kept size. The A2A bridge's look-ahead
 * reserves this before a door runs; the charge at keeping decides with the task's actual size.
 */
export const A2A_TASK_LEAST_BYTES = Buffer.byteLength(TOO_LARGE, "utf8") + 512;

function bytesOf(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
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
  // One statement: the old tasks go and their bytes leave the city-wide store count.
  const [row] = rowsOf<{ n: number }>(
    await db.execute(sql`
      WITH gone AS (
        DELETE FROM a2a_tasks WHERE id IN (
          SELECT id FROM a2a_tasks WHERE created_at < ${retentionCutoff(now).toISOString()}::timestamptz LIMIT ${SWEEP_BATCH})
        RETURNING bytes),
      released AS (${releaseSql("a2a_tasks", sql`(SELECT coalesce(sum(bytes + ${STORE_ROW_BYTES}::int), 0) FROM gone)`)})
      SELECT count(*)::int AS n FROM gone, released`),
  );
  return Number(row?.n ?? 0);
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

/** Where a page of ListTasks starts: after this task, in the listing's order (newest first). */
export type TaskCursor = { createdAt: Date; id: string };

/** What ListTasks may narrow a listing to (A2A 1.0 ListTasksRequest): a context, a state, a status time. */
export type TaskFilter = { contextId?: string; state?: string; statusAfter?: string };

/**
 * One page of an owner's kept tasks within the retention, newest first (created_at, then id, both
 * descending: the order keepTask evicts in), starting after `after`; `next` is the cursor of the
 * page's last task when more follow, else null. `total` counts every task the filter matches.
 */
export async function listKeptTasks(
  db: Database,
  ownerHash: string,
  page: { limit: number; after?: TaskCursor; filter?: TaskFilter },
  now: Date,
): Promise<{ tasks: Record<string, unknown>[]; next: TaskCursor | null; total: number }> {
  const filter = page.filter ?? {};
  const matching = and(
    eq(a2aTasks.ownerHash, ownerHash),
    gte(a2aTasks.createdAt, retentionCutoff(now)),
    filter.contextId ? sql`${a2aTasks.task}->>'contextId' = ${filter.contextId}` : undefined,
    filter.state ? sql`${a2aTasks.task}->'status'->>'state' = ${filter.state}` : undefined,
    filter.statusAfter ? sql`${a2aTasks.task}->'status'->>'timestamp' > ${filter.statusAfter}` : undefined,
  );
  const after = page.after ? sql`(${a2aTasks.createdAt}, ${a2aTasks.id}) < (${page.after.createdAt.toISOString()}::timestamptz, ${page.after.id})` : undefined;
  const rows = await db
    .select({ id: a2aTasks.id, createdAt: a2aTasks.createdAt, task: a2aTasks.task })
    .from(a2aTasks)
    .where(and(matching, after))
    .orderBy(desc(a2aTasks.createdAt), desc(a2aTasks.id))
    .limit(page.limit + 1);
  const [counted] = await db
    .select({ total: sql<number>`count(*)::int` })
    .from(a2aTasks)
    .where(matching);
  const shown = rows.slice(0, page.limit);
  const last = shown.at(-1);
  return {
    tasks: shown.map((r) => r.task),
    next: rows.length > page.limit && last ? { createdAt: last.createdAt, id: last.id } : null,
    total: counted?.total ?? 0,
  };
}
