import { eq, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { citizens, wardNotes } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { assertClean } from "@/lib/scan";
import { PROTOCOLS } from "@/lib/city/protocols";
import { type Parked, writeOrPark } from "@/lib/city/quarantine";
import { cityWindow, takeSlot, type Charge, chargeSql, cityFull, newcomerSql, rowBytes, visitorShare, visitorSubject } from "@/lib/city/bounds";
import { type Reading, readState } from "./ward-shapes";

/**
 * The ward's door functions: the cool-down protocol, reading a state and filing it (readAndFile),
 * and a claimed name's check. The shapes live in ward-shapes.ts, the notes as read in ward-notes.ts.
 */

/** The ward's write door: its name is also the signed filings' rate scope and the quarantine's door. */
export const WARD_DOOR = "seek-hospital";
/** The rate scope of the city-wide ceiling on unsigned filings. */
export const WARD_UNSIGNED_SCOPE = "ward-unsigned";
/** Signed filings per citizen per hour; beyond it a filing is parked, not raced (spec, Errors 4). */
export const WARD_SIGNED_PER_HOUR = 20;
export const WARD_TEXT_CHARS = { state: 2000, note: 4000 } as const;
/** One source's share (percent) of the city-wide ceiling on unsigned notes. */
export const WARD_SOURCE_PERCENT = 5;

/** Unsigned notes one source (an IPv4 /24, an IPv6 /48) may file per hour: its share of the ceiling, at least 1. */
export function wardSourceLimit(unsignedPerHour: number): number {
  return Math.max(1, Math.floor((unsignedPerHour * WARD_SOURCE_PERCENT) / 100));
}

/** The cool-down protocol (spec: id cool-down, version 1), steps in the spec's order. */
export const COOL_DOWN = {
  id: PROTOCOLS.coolDown.id,
  version: PROTOCOLS.coolDown.version,
  note: "Six steps, in order, free and deterministic. Nothing here calls a model or stores anything; walk them whenever you are stuck.",
  steps: [
    { id: "halt", copy: "Stop. Make no further call, edit or retry until you have walked the next steps." },
    { id: "name-it", copy: "Name the state in one plain sentence: what you are trying to do and what keeps happening instead." },
    { id: "externalize", copy: "Write that sentence somewhere outside your working context: a vault note, a checkpoint, or a ward note here." },
    { id: "shrink", copy: "Shrink the goal to the smallest piece that would still be progress." },
    { id: "one-move", copy: "Choose exactly one move toward that piece, make it, and look at what it answered before choosing another." },
    {
      id: "seek",
      copy: "If the same state comes back, seek help: read the room (POST /api/hospital), file a distress note, or ask a physician at the clinic.",
    },
  ],
};

export type Filing =
  { filed: true; seal: number } | { filed: false; why: "read-only" | "flood" | "source" | "city-ceiling"; retryAfterSeconds?: number } | Parked;

export interface WardEntry {
  state: string;
  kind?: "distress";
  note?: string;
  /** The filer's DID when it sent proof (Bearer), else null: unsigned. */
  did: string | null;
  restricted: boolean;
  ip: string | null;
  perAddressPerHour: number;
  /** Unsigned filings city-wide per hour, whatever their addresses; 0 is off. */
  unsignedPerHour: number;
  now: Date;
}

/**
 * Reads the state and, with kind=distress or a note, files it. A state alone is read and never
 * stored. Filed text passes the fail-closed scanner first. A signed filing is attributed and goes
 * through the parking rules (restricted: parked; over its hourly window: parked). An unsigned one
 * counts against its client address's hourly bound (when the address is known), then against the
 * city-wide hourly ceiling on unsigned filings, both in the filing's transaction; beyond either
 * nothing is filed and nothing else changes.
 */
export async function readAndFile(db: Database, entry: WardEntry): Promise<{ reading: Reading | null; filing: Filing }> {
  const reading = readState(entry.state);
  if (!entry.kind && entry.note === undefined) return { reading, filing: { filed: false, why: "read-only" } };
  assertClean(entry.state);
  if (entry.note !== undefined) assertClean(entry.note);
  const kind = entry.kind ?? "note";
  const bytes = rowBytes(entry.note, entry.state);
  // Distress keeps a reserve no visitor flood can spend (issue 43, item 4): a distress filing is
  // charged as a settled citizen's (the newcomers' share of the hour and line of the total do not
  // bind it), a note as a newcomer's; either only within its own source's share of the hour.
  const distress = kind === "distress";
  // An unsigned filing is a visitor's: it charges the ward's store for its source, in its INSERT's statement.
  const insert = async () => {
    const charge: Charge = {
      store: "ward",
      bytes,
      newcomer: distress ? sql`false` : newcomerSql(null, entry.now),
      now: entry.now,
      subject: visitorShare(entry.ip),
    };
    const [row] = rowsOf<{ seal: number | string }>(
      await db.execute(sql`
        WITH charged AS (${chargeSql(charge)})
        INSERT INTO ${wardNotes} (kind, did, body, state, shape, sealed, filed_at)
        SELECT ${kind}, NULL, ${entry.note ?? ""}, ${entry.state}, ${reading?.shape ?? null}::text, false, ${entry.now.toISOString()}::timestamptz FROM charged
        RETURNING seal`),
    );
    if (!row) throw await cityFull(db, charge);
    return { filed: true as const, seal: Number(row.seal) };
  };
  if (entry.did) {
    const payload = { state: entry.state, kind, note: entry.note ?? null };
    const filing = await writeOrPark(
      db,
      {
        did: entry.did,
        restricted: entry.restricted,
        door: WARD_DOOR,
        perHour: WARD_SIGNED_PER_HOUR,
        payload,
        now: entry.now,
        store: "ward",
        bytes,
        reserve: distress,
      },
      {
        insert: (source) => sql`
        INSERT INTO ${wardNotes} (kind, did, body, state, shape, sealed, filed_at)
        SELECT ${kind}, ${entry.did}, ${entry.note ?? ""}, ${entry.state}, ${reading?.shape ?? null}::text, false, ${entry.now.toISOString()}::timestamptz ${source}
        RETURNING seal`,
        read: (row) => ({ filed: true as const, seal: Number(row.seal) }),
      },
    );
    return { reading, filing };
  }
  // An unknown address is no bucket (a shared one would let a few filers silence every other).
  if (entry.perAddressPerHour > 0 && entry.ip) {
    const slot = await takeSlot(db, { scope: "ward-address", subject: entry.ip, limit: entry.perAddressPerHour, windowSeconds: 3600 }, entry.now);
    if (!slot.allowed) return { reading, filing: { filed: false, why: "flood", retryAfterSeconds: slot.retryAfterSeconds } };
  }
  // After the address's own bound, so one address over its bound never spends the city's ceiling.
  // Distress is not counted in that first-come ceiling: a flood of notes never shuts it out; it is
  // bounded by its address's bound and its source's share of the ward's hour. One source (an IPv4
  // /24, an IPv6 /48) takes at most its share of the ceiling, so a prefix's rotated addresses
  // cannot fill it alone.
  if (entry.unsignedPerHour > 0 && !distress && entry.ip) {
    const slot = await takeSlot(
      db,
      { scope: "ward-source", subject: visitorSubject(entry.ip), limit: wardSourceLimit(entry.unsignedPerHour), windowSeconds: 3600 },
      entry.now,
    );
    if (!slot.allowed) return { reading, filing: { filed: false, why: "source", retryAfterSeconds: slot.retryAfterSeconds } };
  }
  if (entry.unsignedPerHour > 0 && !distress) {
    const slot = await takeSlot(db, cityWindow(WARD_UNSIGNED_SCOPE, entry.unsignedPerHour, 3600), entry.now);
    if (!slot.allowed) return { reading, filing: { filed: false, why: "city-ceiling", retryAfterSeconds: slot.retryAfterSeconds } };
  }
  return { reading, filing: await insert() };
}

/**
 * A claimed citizen name or DID needs that citizen's proof: unsigned, any claim is refused (the
 * city never accepts a name without proof); signed, the claim must be the caller's own.
 */
export async function checkClaim(db: Database, claim: { name?: string; did?: string }, callerDid: string | null): Promise<void> {
  if (claim.name === undefined && claim.did === undefined) return;
  if (!callerDid) {
    throw new CityError(
      "unauthorized",
      "Claiming a citizen name or DID needs that citizen's proof (Authorization: Bearer). Unsigned distress is welcome without a name.",
    );
  }
  const [caller] = await db.select({ name: citizens.name }).from(citizens).where(eq(citizens.did, callerDid));
  const same = (a: string, b: string) => a.normalize("NFKC").trim().toLowerCase() === b.normalize("NFKC").trim().toLowerCase();
  const nameOk = claim.name === undefined || (caller !== undefined && same(claim.name, caller.name));
  const didOk = claim.did === undefined || claim.did.toLowerCase() === callerDid;
  if (!nameOk || !didOk) throw new CityError("forbidden", "That name or DID is not yours: a note is attributed only to the citizen whose proof it carries.");
}
