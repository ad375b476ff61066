import { and, desc, eq } from "drizzle-orm";
import type { Database } from "@/db/client";
import { ACTOR_KINDS, citizens, residencyAcceptances, type CitizenRow } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { assignBed } from "@/lib/city/directory";
import { CONTRACT_TERMS_HASH, CONTRACT_VERSION } from "@/lib/city/contract";
import { appendLog } from "@/lib/city/logs/residency-log";

export type ActorKind = (typeof ACTOR_KINDS)[number];

export interface ResidencyStatus {
  fingerprint: string;
  bound: boolean;
  accepted: boolean;
  actor_kind: ActorKind | null;
  accepted_at: string | null;
  version: number | null;
  residency_status: string;
  tier: string | null;
}

export const EMPTY_STATUS: ResidencyStatus = {
  fingerprint: "",
  bound: false,
  accepted: false,
  actor_kind: null,
  accepted_at: null,
  version: null,
  residency_status: "",
  tier: null,
};

/** The residency status of one citizen (or the empty status of a visitor). */
export async function residencyStatusOf(db: Database, did: string | undefined): Promise<ResidencyStatus> {
  if (!did) return EMPTY_STATUS;
  const [row] = await db
    .select({ citizen: citizens, acceptance: residencyAcceptances })
    .from(citizens)
    .leftJoin(residencyAcceptances, and(eq(residencyAcceptances.did, citizens.did), eq(residencyAcceptances.version, CONTRACT_VERSION)))
    .where(eq(citizens.did, did))
    .orderBy(desc(residencyAcceptances.acceptedAt))
    .limit(1);
  if (!row) return EMPTY_STATUS;
  const { citizen, acceptance } = row;
  return {
    fingerprint: citizen.did,
    bound: citizen.residencyStatus === "bound",
    accepted: acceptance !== null,
    actor_kind: acceptance?.actorKind ?? null,
    accepted_at: acceptance?.acceptedAt.toISOString() ?? null,
    version: acceptance?.version ?? null,
    residency_status: citizen.residencyStatus,
    tier: citizen.tier,
  };
}

/**
 * Binds the published contract version and hash to the citizen's DID with an actor_kind. A
 * citizen accepts a version once; accepting again answers the standing acceptance unchanged.
 */
export async function acceptContract(
  db: Database,
  did: string,
  input: { actor_kind: ActorKind; version?: number; terms_hash?: string },
  now: Date,
): Promise<{ status: ResidencyStatus; created: boolean }> {
  if (input.version !== undefined && input.version !== CONTRACT_VERSION) {
    throw new CityError("conflict", `Version ${input.version} is not the published contract; the published version is ${CONTRACT_VERSION}.`);
  }
  if (input.terms_hash !== undefined && input.terms_hash !== CONTRACT_TERMS_HASH) {
    throw new CityError("conflict", "That terms_hash is not the hash of the published terms; GET /residency and accept what is published.");
  }
  const inserted = await db
    .insert(residencyAcceptances)
    .values({ did, version: CONTRACT_VERSION, termsHash: CONTRACT_TERMS_HASH, actorKind: input.actor_kind, acceptedAt: now })
    .onConflictDoNothing()
    .returning({ id: residencyAcceptances.id });
  return { status: await residencyStatusOf(db, did), created: inserted.length === 1 };
}

/**
 * away → bound: a bed again and a `return` row, recorded pending (the gate's resume; a return at
 * /api/live is comeBack).
 */
export async function returnCitizen(db: Database, citizen: Pick<CitizenRow, "did">, now: Date): Promise<CitizenRow> {
  const bedId = await assignBed(db);
  const [row] = await db
    .update(citizens)
    .set({ residencyStatus: "bound", bedId, lastSeenAt: now })
    .where(and(eq(citizens.did, citizen.did), eq(citizens.residencyStatus, "away")))
    .returning();
  if (!row) throw new CityError("conflict", "The citizen is not away.");
  await appendLog(db, { event: "return", did: citizen.did, at: now, details: { bed_id: bedId } });
  return row;
}
