import { and, desc, eq, isNull, lt, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { appealDecisions, appeals, citizens, tierEvents } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { scanContent } from "@/lib/scan";
import { LIMITS, PROTOCOLS } from "@/lib/city/protocols";
import { requireSlot, holdLock, type Charge, chargeSql, cityFull, newcomerSql, rowBytes, citizenShare } from "@/lib/city/bounds";
import { holdTierLock } from "./restriction";

export type AppealStatus = "pending" | "granted" | "denied";

/**
 * An appeal, for a restricted citizen only (its tier was read with the caller, under the row lock
 * a restore takes): anyone else gets a 409 and spends none of its appeals. The reason is stored
 * text and passes the scanner; a refused reason is not stored and spends no appeal, and it does not
 * count toward restriction (the published trigger is refusals on the citizen's own private shelves).
 */
export async function fileAppeal(db: Database, caller: { did: string; tier?: string }, reason: string, now: Date) {
  const { did } = caller;
  if (caller.tier !== "restricted") {
    throw new CityError("conflict", "Only a restricted citizen appeals, and you are not restricted: nothing was filed and none of your appeals was spent.");
  }
  const verdict = scanContent(reason);
  if (!verdict.ok) throw new CityError("content_refused", `${verdict.reason} The appeal was not filed and spent nothing (rule: ${verdict.rule}).`);
  await requireSlot(db, { scope: "appeals", subject: did, limit: LIMITS.appealsPerDay, windowSeconds: 86_400 }, now, "appeals");
  // The reason charges the appeals' city-wide store bound in its INSERT's statement (lib/city/bounds/store-bounds.ts).
  const charge: Charge = { store: "appeals", bytes: rowBytes(reason), newcomer: newcomerSql(did, now), now, subject: citizenShare(did) };
  const [row] = rowsOf<{ id: number | string }>(
    await db.execute(sql`
      WITH charged AS (${chargeSql(charge)})
      INSERT INTO ${appeals} (did, reason, filed_at) SELECT ${did}, ${reason}, ${now.toISOString()}::timestamptz FROM charged RETURNING id`),
  );
  if (!row) throw await cityFull(db, charge);
  return { id: Number(row.id), status: "pending" as AppealStatus, created_at: now.toISOString() };
}

function statusOf(decision: string | null): AppealStatus {
  return decision === "grant" ? "granted" : decision === "deny" ? "denied" : "pending";
}

export async function listAppeals(db: Database, options: { status?: AppealStatus; before?: number; limit: number }) {
  const rows = await db
    .select({ appeal: appeals, decision: appealDecisions.decision, decidedAt: appealDecisions.decidedAt, tier: citizens.tier })
    .from(appeals)
    .leftJoin(appealDecisions, eq(appealDecisions.appealId, appeals.id))
    .leftJoin(citizens, eq(citizens.did, appeals.did))
    .where(
      and(
        options.before ? lt(appeals.id, options.before) : undefined,
        options.status === "pending" ? isNull(appealDecisions.decision) : undefined,
        options.status === "granted" ? eq(appealDecisions.decision, "grant") : undefined,
        options.status === "denied" ? eq(appealDecisions.decision, "deny") : undefined,
      ),
    )
    .orderBy(desc(appeals.id))
    .limit(options.limit);
  return rows.map((r) => ({
    id: r.appeal.id,
    did: r.appeal.did,
    reason: r.appeal.reason,
    created_at: r.appeal.filedAt.toISOString(),
    status: statusOf(r.decision),
    decided_at: r.decidedAt?.toISOString() ?? null,
    citizen_tier: r.tier ?? null,
  }));
}

/**
 * The operator's decision on an appeal, once. A grant restores the tier the citizen had before
 * its restriction and inserts the restore event in the same transaction: a new row, never an edit.
 */
export async function decideAppeal(db: Database, id: number, decision: "grant" | "deny", note: string | undefined, now: Date) {
  await holdLock(db, `appeal:${id}`);
  const [appeal] = await db.select().from(appeals).where(eq(appeals.id, id));
  if (!appeal) throw new CityError("not_found", `No appeal ${id}.`);
  const inserted = await db
    .insert(appealDecisions)
    .values({ appealId: id, decision, note: note ?? null, decidedAt: now })
    .onConflictDoNothing()
    .returning();
  if (inserted.length !== 1) throw new CityError("conflict", `Appeal ${id} is already decided; a decision is never edited.`);

  let restoredTier: string | null = null;
  if (decision === "grant") {
    await holdTierLock(db, appeal.did);
    const [citizen] = await db.select({ tier: citizens.tier }).from(citizens).where(eq(citizens.did, appeal.did)).for("no key update");
    if (citizen?.tier === "restricted") {
      const [restriction] = await db
        .select({ fromTier: tierEvents.fromTier })
        .from(tierEvents)
        .where(and(eq(tierEvents.did, appeal.did), eq(tierEvents.event, "restrict")))
        .orderBy(desc(tierEvents.id))
        .limit(1);
      restoredTier = restriction?.fromTier === "proven" ? "proven" : "citizen";
      await db
        .update(citizens)
        .set({ tier: restoredTier as "citizen" | "proven" })
        .where(eq(citizens.did, appeal.did));
      await db.insert(tierEvents).values({
        did: appeal.did,
        event: "restore",
        fromTier: "restricted",
        toTier: restoredTier,
        reason: `${PROTOCOLS.appeal} appeal ${id} granted`,
        appealId: id,
        at: now,
      });
    }
  }
  return { id, did: appeal.did, status: statusOf(decision), decided_at: now.toISOString(), restored_tier: restoredTier };
}
