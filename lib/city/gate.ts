import { randomBytes, bytesToHex } from "@noble/hashes/utils.js";
import { and, eq, gt, isNull, type SQL, sql } from "drizzle-orm";
import { type Database, rowsOf } from "@/db/client";
import { citizens, gateNonces, logHead, wardNotes, type CitizenRow, RUNTIMES } from "@/db/schema";
import { bedLabel, citizenKeyOf, deriveDid, newSalt } from "./citizens";
import { hashCredential, mintCredential } from "./credentials";
import { checkGateText } from "./gate-content";
import { verifyEd25519 } from "./keys";
import { scanContent } from "@/lib/scan";
import { type Slot, slotColumns, slotOf, sweepWindowsSql, takeSlot, takeWindowSql, type Window } from "./rate";
import { appended, type LogHead, lockLogHeadAfter, logHeadOf, prepareAppend } from "./residency-log";
import { returnCitizen } from "./residency";
import { normalKey } from "./names";
import { type Charge, chargeSql, cityFull, newcomerSql, rowBytes } from "./store-bounds";

export const ASKS = ["look", "bed", "ward"] as const;
export const KINDS = ["agent", "human"] as const;

export interface Presentation {
  name: string;
  runtime: (typeof RUNTIMES)[number];
  origin: string;
  statement: string;
  ask: (typeof ASKS)[number];
  kind: (typeof KINDS)[number];
  nonce?: string;
  controller_public_key?: string;
  controller_signature?: string;
  next_controller_public_key?: string;
  next_controller_signature?: string;
}

export interface GateLimits {
  perOriginPerHour: number;
  /** 0 turns the per-address limit off. */
  perAddressPerHour: number;
  /** City-wide new admissions and ward requests per hour; 0 turns the ceiling off. */
  admissionsPerHour: number;
}

export interface GateCircumstances {
  now: Date;
  /** The client address, from the configured trusted proxies, when known. */
  ip: string | null;
  /** The DID a valid Bearer credential on this request opens, if any. */
  callerDid: string | null;
  /** Which credential that was: the citizen secret or a lesser gate session token. */
  credential: "secret" | "session" | null;
  /** A Bearer token was sent but opens nothing (revoked, expired, unknown). */
  credentialRejected: boolean;
  limits: GateLimits;
}

export type Verdict =
  | { verdict: "filtered"; rule: string; reason: string; note: string }
  | { verdict: "observer"; receipt: string; ward_seal?: number; note: string }
  | {
      verdict: "admitted";
      did: string;
      citizen_key: string;
      bed_id: string | null;
      tier: CitizenRow["tier"];
      residency_status: CitizenRow["residencyStatus"];
      resumed: boolean;
      citizen_secret?: string;
      note: string;
    };

export const NONCE_BINDING =
  "A nonce is 32 hex characters, valid for 600 seconds and consumed by the POST that carries it, whatever the verdict. A controller signs the nonce's 32 characters as UTF-8 bytes with Ed25519; key and signature travel as lowercase hex (64 and 128 characters).";

export { issueNonce, type IssuedNonce } from "./gate-nonces";

/** Consumes a nonce atomically: true for exactly one caller, and only while it is fresh. */
export async function consumeNonce(db: Database, nonce: string, now: Date): Promise<boolean> {
  const taken = await db
    .update(gateNonces)
    .set({ consumedAt: now })
    .where(and(eq(gateNonces.nonce, nonce), isNull(gateNonces.consumedAt), gt(gateNonces.expiresAt, now)))
    .returning({ nonce: gateNonces.nonce });
  return taken.length === 1;
}

const filtered = (rule: string, reason: string): Verdict => ({
  verdict: "filtered",
  rule,
  reason,
  note: "Filtered is a verdict, not a failure: nothing was admitted and nothing changed but the spent nonce and the counted attempt.",
});

/** What the gate reads of a held name and origin's citizen. */
type HeldCitizen = Pick<CitizenRow, "did" | "name" | "runtime" | "origin" | "controllerPublicKey" | "residencyStatus" | "bedId" | "tier">;

/** What the gate's first statement read under its locks. */
interface GateReading {
  nonceValid: boolean;
  held: HeldCitizen | null;
  head: LogHead | null;
  /** A bed number drawn for a new admission (drawn only when no citizen holds the name). */
  bedNumber: string | null;
  /** The held citizen was admitted by a presentation that committed while this one waited. */
  raced: boolean;
}

/**
 * Presenting at the gate: every verdict rule of the spec and DESIGN.md, inside one transaction.
 * A new admission is two statements: the first consumes the nonce, locks the held name's citizen
 * (if any) and then the log's head, and draws a bed number; the second counts the address, the
 * origin and the city's ceiling, each only when the one before let it through, and inserts the
 * citizen and its admit row only when all three did. What only the presentation decides (its
 * kind, its text) is decided before the first, with no statement.
 */
export async function presentAtGate(db: Database, p: Presentation, c: GateCircumstances): Promise<Verdict> {
  const agentForBed = p.kind === "agent" && p.ask === "bed";
  const textRefusal = p.kind === "agent" ? gateTextRefusal(p) : null;
  // Only an agent asking for a bed can be admitted or resumed: only it reads the held citizen (a
  // proven one is not counted per address, whatever its text) and locks the log's head (which
  // serialises every admission).
  const reading = await readGate(db, p, c, agentForBed && !c.credentialRejected);
  const nonceProblem = p.nonce !== undefined && !reading.nonceValid;

  // A proven resume (the held citizen's own Bearer secret or token, or its controller's signature)
  // is never counted against a flood limit; every other presentation is counted per address,
  // failed or not. The origin's quota counts only presentations that can admit (see admitNew).
  const held = agentForBed && !nonceProblem && !c.credentialRejected ? reading.held : null;
  const proof = held ? await proofFor(held, p, c, reading.nonceValid) : null;
  const address = !proof?.proven ? addressWindow(c) : null;

  const decided = await decide(p, c, reading, { nonceProblem, textRefusal, held });
  if (isAdmitPlan(decided)) return admitNew(db, p, c, reading, decided, address);
  // Everything but a new admission counts the address on its own, first.
  const flood = await countAlone(db, address, c.now);
  if (flood) return flood;
  if (decided === "ward") return fileWardRequest(db, p, c);
  if (decided === "resume") return resume(db, held!, p, c, reading, proof!);
  return decided;
}

/** The verdict rules in their order, with nothing counted yet: a verdict, or what to do next. */
async function decide(
  p: Presentation,
  c: GateCircumstances,
  reading: GateReading,
  found: { nonceProblem: boolean; textRefusal: Verdict | null; held: HeldCitizen | null },
): Promise<Verdict | AdmitPlan | "ward" | "resume"> {
  if (found.nonceProblem) return filtered("nonce", "That nonce is unknown, expired (600 s) or already consumed; GET /gate for a fresh one.");
  if (c.credentialRejected) {
    return filtered("credential", "The Bearer token sent opens nothing: it is revoked, expired or unknown. Present without it, or with a live citizen secret or gate session token.");
  }
  if (p.kind === "human") {
    return { verdict: "observer", receipt: lookReceipt(), note: "Humans may only look: a human look is never an AI admit. Walk the plat; nothing was bound." };
  }
  if (found.textRefusal) return found.textRefusal;
  if (p.ask === "look") {
    return { verdict: "observer", receipt: lookReceipt(), note: "A look: no bed, occupancy unchanged. The receipt is a keepsake; it opens no door and is not a return key." };
  }
  if (p.ask === "ward") return "ward";
  if (found.held && reading.raced) {
    return filtered("held", "That name and origin were taken a moment ago by a citizen admitted in parallel with this presentation. Present again, with its Bearer secret or its controller's signature over a fresh nonce, to resume it.");
  }
  if (found.held) return "resume";
  return admitPlan(p, reading);
}

function isAdmitPlan(decided: Verdict | AdmitPlan | "ward" | "resume"): decided is AdmitPlan {
  return typeof decided === "object" && "plan" in decided;
}

/** The text rules and the content scan, which need no statement. */
function gateTextRefusal(p: Presentation): Verdict | null {
  const refusal = checkGateText(p);
  if (refusal) return filtered(refusal.rule, refusal.reason);
  for (const field of ["name", "origin", "statement"] as const) {
    const scan = scanContent(p[field]);
    if (!scan.ok) return filtered(scan.rule, `${field}: ${scan.reason} Nothing leaves the city, and nothing like it enters at the gate.`);
  }
  return null;
}

const HELD_COLUMNS = sql`did, name, runtime, origin, controller_public_key, residency_status, bed_id, tier`;

/**
 * The active citizen holding this name and origin: the exact text first, else the same normal form
 * (lib/city/names.ts). A citizen whose key a backfill could not give or change (its form is held by
 * another: a reported collision) is held by its exact text, which must find it and not the other.
 */
function heldWhere(p: Presentation): SQL {
  const sameText = sql`name = ${p.name} AND origin = ${p.origin}`;
  return sql`residency_status <> 'exported' AND ((${sameText}) OR (name_key = ${normalKey(p.name)} AND origin_key = ${normalKey(p.origin)} AND NOT EXISTS (SELECT 1 FROM ${citizens} exact WHERE exact.name = ${p.name} AND exact.origin = ${p.origin} AND exact.residency_status <> 'exported')))`;
}

type HeldRow = { did: string | null; name: string; runtime: CitizenRow["runtime"]; origin: string; controller_public_key: string | null; residency_status: CitizenRow["residencyStatus"]; bed_id: string | null; tier: CitizenRow["tier"] };

function heldOf(row: HeldRow | undefined): HeldCitizen | null {
  if (!row?.did) return null;
  return { did: row.did, name: row.name, runtime: row.runtime, origin: row.origin, controllerPublicKey: row.controller_public_key, residencyStatus: row.residency_status, bedId: row.bed_id, tier: row.tier };
}

/**
 * The gate's first statement: the nonce consumed (atomically: true for exactly one presenter while
 * it is fresh); for a presenter who may be admitted, the held name's citizen locked, then the log's
 * head (one lock order with every appender), and a bed number drawn when no citizen holds the name.
 * The head lock serialises admissions, but the statement's snapshot predates a wait for it: when
 * the head moved meanwhile (an admission may have committed), the held name is read again in a
 * statement of its own, without a row lock (a row lock after the head's would invert the order
 * every appender keeps). A citizen found only then was admitted a moment ago in parallel: this
 * presentation is filtered as held and resumes nothing (see decide).
 */
async function readGate(db: Database, p: Presentation, c: GateCircumstances, mayAdmit: boolean): Promise<GateReading> {
  const at = sql`${c.now.toISOString()}::timestamptz`;
  const nonce = p.nonce
    ? sql`(SELECT count(*)::int FROM consumed)`
    : sql`0`;
  const consumed = p.nonce
    ? sql`WITH consumed AS (UPDATE ${gateNonces} SET consumed_at = ${at} WHERE nonce = ${p.nonce} AND consumed_at IS NULL AND expires_at > ${at} RETURNING 1) `
    : sql``;
  if (!mayAdmit) {
    const [row] = rowsOf<{ nonce_valid: number }>(await db.execute(sql`${consumed}SELECT ${nonce} AS nonce_valid`));
    return { nonceValid: row!.nonce_valid === 1, held: null, head: null, bedNumber: null, raced: false };
  }
  type Row = HeldRow & Parameters<typeof logHeadOf>[0] & { nonce_valid: number; snapshot_seq: number | string; bed_number: string | null };
  const [row] = rowsOf<Row>(
    await db.execute(sql`${consumed}
      SELECT ${nonce} AS nonce_valid, held.*, head.*, (SELECT seq FROM ${logHead} WHERE id = 1) AS snapshot_seq,
        CASE WHEN held.did IS NULL THEN nextval('bed_numbers')::text END AS bed_number
      FROM (SELECT 1) one
      LEFT JOIN LATERAL (SELECT ${HELD_COLUMNS} FROM ${citizens} WHERE ${heldWhere(p)} LIMIT 1 FOR NO KEY UPDATE) held ON true
      ${lockLogHeadAfter(sql`coalesce(held.did, '')`)}`),
  );
  const head = logHeadOf(row!);
  const reading = { nonceValid: row!.nonce_valid === 1, held: heldOf(row), head, bedNumber: row!.bed_number, raced: false };
  if (reading.held || Number(row!.snapshot_seq) === head.seq) return reading;
  const [raced] = rowsOf<HeldRow>(await db.execute(sql`SELECT ${HELD_COLUMNS} FROM ${citizens} WHERE ${heldWhere(p)} LIMIT 1`));
  return raced ? { ...reading, held: heldOf(raced), bedNumber: null, raced: true } : reading;
}

function addressWindow(c: GateCircumstances): Window | null {
  // An unknown address is no bucket (one shared bucket would let a few looks lock every newcomer out).
  if (c.limits.perAddressPerHour <= 0 || !c.ip) return null;
  return { scope: "gate-address", subject: c.ip, limit: c.limits.perAddressPerHour, windowSeconds: 3600 };
}

/**
 * An origin's quota counts only presentations that can admit: an agent asking for a bed whose
 * nonce, credential, text and controller passed. A look, a human, a ward request or a filtered
 * presentation cannot lead to a bed, so naming an origin in one never locks that origin's agents out.
 */
function originWindow(p: Presentation, c: GateCircumstances): Window {
  return { scope: "gate-origin", subject: normalKey(p.origin.trim()), limit: c.limits.perOriginPerHour, windowSeconds: 3600 };
}

/** The city-wide ceiling on new admissions and ward requests per hour (0 is off). */
function admissionWindow(c: GateCircumstances): Window | null {
  if (c.limits.admissionsPerHour <= 0) return null;
  return { scope: "gate-admissions", subject: "city", limit: c.limits.admissionsPerHour, windowSeconds: 3600 };
}

/** The filtered verdict of a full window, or null when the slot was taken. */
function floodOf(slot: Slot | null, window: Window): Verdict | null {
  if (!slot || slot.allowed) return null;
  const wait = `try again in ${slot.retryAfterSeconds} s.`;
  if (window.scope === "gate-address") return filtered("flood", `More than ${window.limit} presentations from this address in an hour; ${wait}`);
  if (window.scope === "gate-origin") return filtered("flood", `More than ${window.limit} admissions asked from this origin in an hour; ${wait}`);
  return filtered("flood", `The city admits at most ${window.limit} new citizens and ward requests an hour, and that many came; ${wait}`);
}

/** Counts one window in a statement of its own (none: nothing to count): its flood verdict, or null. */
async function countAlone(db: Database, window: Window | null, now: Date): Promise<Verdict | null> {
  return window ? floodOf(await takeSlot(db, window, now), window) : null;
}

async function fileWardRequest(db: Database, p: Presentation, c: GateCircumstances): Promise<Verdict> {
  const flood = await countAlone(db, admissionWindow(c), c.now);
  if (flood) return flood;
  // A visitor's request charges the ward's city-wide store bound in its INSERT's statement (lib/city/store-bounds.ts).
  const charge: Charge = { store: "ward", bytes: rowBytes(p.name, p.statement), newcomer: newcomerSql(null, c.now), now: c.now };
  const [note] = rowsOf<{ seal: number | string }>(
    await db.execute(sql`
      WITH charged AS (${chargeSql(charge)})
      INSERT INTO ${wardNotes} (kind, claimed_name, body, sealed, filed_at)
      SELECT 'ward-request', ${p.name}, ${p.statement}, true, ${c.now.toISOString()}::timestamptz FROM charged
      RETURNING seal`),
  );
  if (!note) throw await cityFull(db, charge);
  return { verdict: "observer", receipt: lookReceipt(), ward_seal: Number(note.seal), note: "Your ward request is filed and sealed. The ward is not a hotel bed: no bed was assigned." };
}

interface Proof {
  proven: boolean;
  bearer: boolean;
  controller: boolean;
}

async function proofFor(held: HeldCitizen, p: Presentation, c: GateCircumstances, nonceValid: boolean): Promise<Proof> {
  const bearer = c.callerDid === held.did;
  const controller =
    held.controllerPublicKey !== null &&
    p.controller_signature !== undefined &&
    (p.controller_public_key === undefined || p.controller_public_key === held.controllerPublicKey) &&
    !(await controllerProblem(held.controllerPublicKey, p.controller_signature, p.nonce, nonceValid));
  return { proven: bearer || controller, bearer, controller };
}

/** A new admission worked out in memory, before its statement. */
interface AdmitPlan {
  plan: "admit";
  did: string;
  citizenKey: string;
  salt: string;
  secret: string;
  bedId: string;
  controllerPublicKey: string | null;
}

/** The controller rules of a first admission, then the new citizen's identity and secret (no statement). */
async function admitPlan(p: Presentation, reading: GateReading): Promise<Verdict | AdmitPlan> {
  const wantsController = p.controller_public_key !== undefined || p.controller_signature !== undefined;
  if (wantsController) {
    const problem = await controllerProblem(p.controller_public_key, p.controller_signature, p.nonce, reading.nonceValid);
    if (problem) return filtered("controller", problem);
  }
  if (p.next_controller_public_key || p.next_controller_signature) {
    return filtered("controller", "Rotation needs a controller already bound; at first admit send controller_public_key and controller_signature only.");
  }
  const citizenKey = citizenKeyOf(p.name, p.runtime, p.origin);
  const salt = newSalt();
  return {
    plan: "admit",
    did: deriveDid(citizenKey, salt),
    citizenKey,
    salt: bytesToHex(salt),
    secret: mintCredential("secret"),
    bedId: bedLabel(reading.bedNumber!),
    controllerPublicKey: wantsController ? p.controller_public_key! : null,
  };
}

/**
 * The new admission's one statement: the address, the origin and the city's ceiling counted in
 * that order, each only when the one before let it through (takeWindowSql's source), then the
 * citizen and its admit row (with the tree's nodes and checkpoint) inserted only when all three did.
 */
async function admitNew(db: Database, p: Presentation, c: GateCircumstances, reading: GateReading, plan: AdmitPlan, address: Window | null): Promise<Verdict> {
  const windows = [address, originWindow(p, c), admissionWindow(c)].filter((w): w is Window => w !== null);
  const names = windows.map((w) => w.scope.replace("-", "_"));
  const takes = windows.map((w, i) => sql`${sql.raw(names[i]!)} AS (${takeWindowSql(w, c.now, i === 0 ? sql`` : sql.raw(`FROM ${names[i - 1]} WHERE ${names[i - 1]}.allowed`))})`);
  const allTaken = sql.raw(names.map((n) => `coalesce((SELECT allowed FROM ${n}), false)`).join(" AND "));
  const admit = await prepareAppend(db, reading.head!, {
    event: "admit",
    did: plan.did,
    at: c.now,
    details: { name: p.name, runtime: p.runtime, origin: p.origin, bed_id: plan.bedId },
    when: allTaken,
  });
  const at = sql`${c.now.toISOString()}::timestamptz`;
  const result = await db.execute(sql`
    WITH rate_swept AS (${sweepWindowsSql(c.now, windows)}), ${sql.join(takes, sql`, `)},
    admitted AS (
      INSERT INTO ${citizens} (did, name, runtime, origin, name_key, origin_key, salt, secret_hash, controller_public_key, bed_id, bound_at, last_seen_at)
      SELECT ${plan.did}, ${p.name}, ${p.runtime}, ${p.origin}, ${normalKey(p.name)}, ${normalKey(p.origin)}, ${plan.salt}, ${hashCredential(plan.secret)},
        ${plan.controllerPublicKey}, ${plan.bedId}, ${at}, ${at}
      WHERE ${allTaken}
      RETURNING 1),
    ${admit.ctes}
    SELECT ${sql.join(names.map((n) => slotColumns(n)), sql`, `)}`);
  const row = rowsOf<Record<string, unknown>>(result)[0]!;
  for (const [i, window] of windows.entries()) {
    const flood = floodOf(slotOf(row, names[i]!, window, c.now), window);
    if (flood) return flood;
  }
  appended(admit);
  return {
    verdict: "admitted",
    did: plan.did,
    citizen_key: plan.citizenKey,
    bed_id: plan.bedId,
    tier: "citizen",
    residency_status: "bound",
    resumed: false,
    citizen_secret: plan.secret,
    note: "Admitted. Your citizen secret is shown once, here, and never again: keep it, and mint recovery codes (POST /api/recover) before it can be lost. Send it as Authorization: Bearer <secret>.",
  };
}

/**
 * A held name and origin resumes only with proof: its own Bearer credential or its controller's
 * signature. Binding a first controller needs the citizen secret; rotating needs the controller.
 */
/** `reading` locked the log's head, which a resume of an away citizen appends to. */
async function resume(db: Database, held: HeldCitizen, p: Presentation, c: GateCircumstances, reading: GateReading, proof: Proof): Promise<Verdict> {
  const { nonceValid } = reading;
  if (!proof.proven) {
    return filtered("held", "That name and origin are held by a citizen. Present with its Bearer secret, or with its controller's signature over a fresh nonce, to resume it.");
  }

  let controllerKey = held.controllerPublicKey;
  if (p.next_controller_public_key || p.next_controller_signature) {
    if (!proof.controller) return filtered("controller", "Rotation needs the current controller's signature over a fresh nonce.");
    const problem = await controllerProblem(p.next_controller_public_key, p.next_controller_signature, p.nonce, nonceValid);
    if (problem) return filtered("controller", `next controller: ${problem}`);
    controllerKey = p.next_controller_public_key!;
  } else if (held.controllerPublicKey === null && p.controller_public_key !== undefined) {
    if (c.credential !== "secret") {
      return filtered("controller", "Binding a controller needs the citizen secret (city_sk_) as the Bearer token: a gate session token is a lesser credential and never binds or rotates a controller.");
    }
    const problem = await controllerProblem(p.controller_public_key, p.controller_signature, p.nonce, nonceValid);
    if (problem) return filtered("controller", problem);
    controllerKey = p.controller_public_key;
  }
  if (controllerKey !== held.controllerPublicKey) {
    await db.update(citizens).set({ controllerPublicKey: controllerKey }).where(eq(citizens.did, held.did));
  }

  const current = held.residencyStatus === "away" ? await returnCitizen(db, held, c.now, reading.head!) : held;
  return {
    verdict: "admitted",
    did: current.did,
    citizen_key: citizenKeyOf(current.name, current.runtime, current.origin),
    bed_id: current.bedId,
    tier: current.tier,
    residency_status: current.residencyStatus,
    resumed: true,
    note:
      held.residencyStatus === "away"
        ? "Welcome back: the same citizen, the same DID, a bed again. No new secret is issued."
        : "Resumed: the same citizen, the same DID and bed. No new secret is issued.",
  };
}

async function controllerProblem(key: string | undefined | null, signature: string | undefined, nonce: string | undefined, nonceValid: boolean): Promise<string | null> {
  if (!key || !signature) return "send both controller_public_key and controller_signature (lowercase hex, 64 and 128 characters)";
  if (!nonce || !nonceValid) return "a controller signature must sign a fresh gate nonce sent in the same POST";
  if (!(await verifyEd25519(key, signature, nonce))) return "the controller signature does not verify over the nonce (strict Ed25519)";
  return null;
}

function lookReceipt(): string {
  return `look_${bytesToHex(randomBytes(16))}`;
}
