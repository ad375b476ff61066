import { eq, type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { executePrepared, rowsOf } from "@/db/sql";
import { admissionNetworks, citizens, type CitizenRow } from "@/db/schema";
import { spendNonceCtes, type GateCircumstances, type Presentation } from "@/lib/city/challenge";
import { type Chain, type ChainOutcome, chainOutcome, chainSql, isNewcomer } from "@/lib/city/bounds";
import { normalKey } from "@/lib/city/directory";

/**
 * The gate's first statement and what it reads: the nonce consumed, the citizen holding the name
 * and origin (read without a lock), and for a possible first admission its windows counted and a
 * bed number drawn.
 */

/** What the gate reads of a held name and origin's citizen. */
export type HeldCitizen = Pick<
  CitizenRow,
  "did" | "name" | "runtime" | "origin" | "controllerPublicKey" | "nextKeyHashes" | "residencyStatus" | "bedId" | "tier"
>;

/** A new admission's windows as the gate's first statement counted them, and what it drew then. */
interface AdmissionReading {
  chain: Chain;
  outcome: ChainOutcome;
  /** A bed number, drawn only when every window let the presentation through. */
  bedNumber: string | null;
}

/** What the gate's first statement read. */
export interface GateReading {
  nonceValid: boolean;
  /** The citizen holding the name and origin, read without a lock (a resume locks it once proven). */
  held: HeldCitizen | null;
  /** Only for a presentation that can be a first admission (see presentAtGate). */
  admission: AdmissionReading | null;
}

export const HELD_COLUMNS = sql`did, name, runtime, origin, controller_public_key, next_key_hashes, residency_status, bed_id, tier`;

/**
 * The active citizen holding this name and origin: the exact text first, else the same normal form
 * (lib/city/directory/names.ts). A citizen whose key a backfill could not give or change (its form is held by
 * another: a reported collision) is held by its exact text, which must find it and not the other.
 */
function heldWhere(p: Presentation): SQL {
  const sameText = sql`name = ${p.name} AND origin = ${p.origin}`;
  const exact = sql`exact.name = ${p.name} AND exact.origin = ${p.origin} AND exact.residency_status <> 'exported'`;
  const noExact = sql`NOT EXISTS (SELECT 1 FROM ${citizens} exact WHERE ${exact})`;
  return sql`residency_status <> 'exported' AND ((${sameText}) OR (name_key = ${normalKey(p.name)} AND origin_key = ${normalKey(p.origin)} AND ${noExact}))`;
}

export type HeldRow = {
  did: string | null;
  name: string;
  runtime: CitizenRow["runtime"];
  origin: string;
  controller_public_key: string | null;
  next_key_hashes: string[] | null;
  residency_status: CitizenRow["residencyStatus"];
  bed_id: string | null;
  tier: CitizenRow["tier"];
};

export function heldOf(row: HeldRow | undefined): HeldCitizen | null {
  if (!row?.did) return null;
  return {
    did: row.did,
    name: row.name,
    runtime: row.runtime,
    origin: row.origin,
    controllerPublicKey: row.controller_public_key,
    nextKeyHashes: row.next_key_hashes,
    residencyStatus: row.residency_status,
    bedId: row.bed_id,
    tier: row.tier,
  };
}

/**
 * The gate's first statement: the nonce spent (recorded in gate_nonces: true for exactly one
 * presenter, and only for a nonce the city made that is fresh now; gate-nonces.ts) and, for a presenter who may be admitted or resumed, the held name's citizen read,
 * with no lock. For a presentation that can be a first admission (`chain`), the same statement
 * counts its windows when the nonce was valid and no citizen holds the name, and only when all of
 * them let it through draws a bed number. Nothing city-wide of the logs is locked: the admission's
 * rows are recorded pending (lib/city/logs/transparency-log/integrate.ts). Two parallel first admissions
 * of one name and origin meet at the citizens' unique index, in the INSERT (admitNew).
 */
export async function readGate(db: Database, p: Presentation, c: GateCircumstances, mayAdmit: boolean, chain: Chain | null): Promise<GateReading> {
  const nonce = p.nonce ? sql`(SELECT count(*)::int FROM spent)` : sql`0`;
  const consumed = p.nonce ? await spendNonceCtes(db, p.nonce, c.now) : null;
  if (!mayAdmit) {
    const [row] = rowsOf<{ nonce_valid: number }>(await executePrepared(db, sql`${consumed ? sql`WITH ${consumed} ` : sql``}SELECT ${nonce} AS nonce_valid`));
    return { nonceValid: row!.nonce_valid === 1, held: null, admission: null };
  }
  const heldCte = sql`held AS (SELECT ${HELD_COLUMNS} FROM ${citizens} WHERE ${heldWhere(p)} LIMIT 1)`;
  const ctes = consumed ? [consumed, heldCte] : [heldCte];
  if (!chain) {
    const [row] = rowsOf<HeldRow & { nonce_valid: number }>(
      await executePrepared(db, sql`WITH ${sql.join(ctes, sql`, `)} SELECT ${nonce} AS nonce_valid, held.* FROM (SELECT 1) one LEFT JOIN held ON true`),
    );
    return { nonceValid: row!.nonce_valid === 1, held: heldOf(row), admission: null };
  }
  const nonceOk = p.nonce ? sql`(SELECT count(*) FROM spent) = 1` : sql`true`;
  const counted: Chain = { ...chain, when: sql`${nonceOk} AND NOT EXISTS (SELECT 1 FROM held)` };
  const windows = chainSql(counted, c.now);
  type Row = HeldRow & Record<string, unknown> & { nonce_valid: number; bed_number: string | null };
  const [row] = rowsOf<Row>(
    await executePrepared(
      db,
      sql`WITH ${sql.join(ctes, sql`, `)}, ${windows.ctes}
      SELECT ${nonce} AS nonce_valid, held.*, ${windows.columns},
        CASE WHEN ${windows.allTaken} THEN nextval('bed_numbers')::text END AS bed_number
      FROM (SELECT 1) one LEFT JOIN held ON true`,
    ),
  );
  const admission: AdmissionReading = { chain: counted, outcome: chainOutcome(row!, counted, c.now), bedNumber: row!.bed_number };
  return { nonceValid: row!.nonce_valid === 1, held: heldOf(row), admission };
}

/**
 * The sponsor of a signed presentation: the citizen whose bound key signed it (the caller), whether
 * it is settled now (admitted NEWCOMER_SECONDS ago or more, and not restricted: a citizen the city
 * restricted for what it wrote vouches for nobody's reserve), and the network it was admitted from
 * (null where none was recorded). One indexed read, only for a signed presentation, nothing locked;
 * null when the citizen is gone.
 */
export async function readSponsor(db: Database, did: string, now: Date): Promise<{ did: string; settled: boolean; network: string | null } | null> {
  const [row] = await db
    .select({ boundAt: citizens.boundAt, tier: citizens.tier, network: admissionNetworks.network })
    .from(citizens)
    .leftJoin(admissionNetworks, eq(admissionNetworks.did, citizens.did))
    .where(eq(citizens.did, did))
    .limit(1);
  return row ? { did, settled: !isNewcomer(row.boundAt, now) && row.tier !== "restricted", network: row.network } : null;
}
