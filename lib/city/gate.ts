import { randomBytes, bytesToHex } from "@noble/hashes/utils.js";
import { and, eq, gt, isNull, type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { citizens, gateNonces, logHead, wardNotes, type CitizenRow, RUNTIMES } from "@/db/schema";
import { bedLabel, citizenKeyOf, deriveDid, newSalt } from "./citizens";
import { hashCredential, mintCredential } from "./credentials";
import { checkGateText } from "./gate-content";
import { verifyEd25519 } from "./keys";
import { scanContent } from "@/lib/scan";
import { type Chain, type ChainOutcome, chainOutcome, chainSql, settle, subjectsRetryAfter, takeChain, undoTakes } from "./gate-windows";
import type { Slot, Window } from "./rate";
import { appended, type LogHead, lockLogHeadIf, logHeadOf, prepareAppend } from "@/lib/city/residency-log";
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
  /**
   * At most this many rows of the gate's per-address and per-origin windows are kept, city-wide
   * (both are keyed by text the client chooses); a new address or origin past it is filtered
   * (rule flood) until the oldest leaves. Unset: GATE_SUBJECTS_MAX.
   */
  subjectsMax?: number;
}

/** The default city-wide bound on the gate's per-address and per-origin window rows (env CITY_GATE_SUBJECTS_MAX). */
export const GATE_SUBJECTS_MAX = 20_000;

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

/**
 * `POST /gate { action: "return" }` from a caller the city cannot name (no Bearer, or one that opens
 * nothing: revoked, expired, unknown, exported): the gate answers verdicts, so this is `filtered`
 * with HTTP 200, as a presentation with a stale credential is. Nothing was read or written.
 */
export function returnWithoutProof(credentialSent: boolean): Verdict {
  return {
    verdict: "filtered",
    rule: "credential",
    reason: credentialSent
      ? "The Bearer token sent opens nothing: it is revoked, expired or unknown, or its citizen was exported. A return needs a live citizen secret or gate session token."
      : "A return needs proof: Authorization: Bearer <citizen secret or gate session token>.",
    note: "Filtered is a verdict, not a failure: nothing was read or changed.",
  };
}

/** What the gate reads of a held name and origin's citizen. */
type HeldCitizen = Pick<CitizenRow, "did" | "name" | "runtime" | "origin" | "controllerPublicKey" | "residencyStatus" | "bedId" | "tier">;

/** A new admission's windows as the gate's first statement counted them, and what it locked and drew then. */
interface AdmissionReading {
  chain: Chain;
  outcome: ChainOutcome;
  /** The log's head, locked only when every window let the presentation through. */
  head: LogHead | null;
  /** A bed number, drawn only with the head. */
  bedNumber: string | null;
}

/** What the gate's first statement read. */
interface GateReading {
  nonceValid: boolean;
  /** The citizen holding the name and origin, read without a lock (a resume locks it once proven). */
  held: HeldCitizen | null;
  /** Only for a presentation that can be a first admission (see presentAtGate). */
  admission: AdmissionReading | null;
  /** The held citizen was admitted by a presentation that committed while this one waited for the head. */
  raced: boolean;
}

/**
 * Presenting at the gate: every verdict rule of the spec and DESIGN.md, inside one transaction.
 * No presentation locks anything of a citizen's, or the log's head, before it is known to admit or
 * resume (issue 29, item 2). What only the presentation decides (its kind, its text, a first
 * controller's signature) is decided before any statement. The first statement consumes the
 * nonce and reads the held name's citizen without a lock; for a presentation that can be a first
 * admission (nonce valid, no citizen holds the name) the same statement counts its windows
 * (address, origin, then the city's ceiling: gate-windows.ts) and only when all let it through
 * locks the log's head and draws a bed number; the second inserts the citizen and its admit row.
 * A held name is resumed only with proof, checked in memory; only then is the citizen's row locked
 * (and the head with it when the citizen is away, for its return row), and read again under the lock.
 */
export async function presentAtGate(db: Database, p: Presentation, c: GateCircumstances): Promise<Verdict> {
  const agentForBed = p.kind === "agent" && p.ask === "bed";
  const textRefusal = p.kind === "agent" ? gateTextRefusal(p) : null;
  // Only an agent asking for a bed, with no rejected credential and text that passed, can be
  // admitted or resumed: only it reads the held citizen (with no lock).
  const mayAdmit = agentForBed && !c.credentialRejected && !textRefusal;
  // A first admission's controller rules need no statement: checked first, so that its windows
  // count only presentations that can admit (the nonce's validity is the statement's condition).
  const firstAdmit = mayAdmit ? await firstAdmitProblem(p) : null;
  const reading = await readGate(db, p, c, mayAdmit, mayAdmit && !firstAdmit ? admissionChain(p, c) : null);
  const nonceProblem = p.nonce !== undefined && !reading.nonceValid;

  // A proven resume (the held citizen's own Bearer secret or token, or its controller's signature)
  // is never counted against a flood limit; every other presentation is counted per address,
  // failed or not. The origin's quota counts only presentations that can admit (see admissionChain).
  const held = mayAdmit && !nonceProblem ? reading.held : null;
  const proof = held ? await proofFor(held, p, c, reading.nonceValid) : null;
  const address = !proof?.proven ? addressWindow(c) : null;

  const decided = decide(p, c, reading, { nonceProblem, textRefusal, held, firstAdmit });
  if (decided === "admit") return admitNew(db, p, c, reading);
  if (decided === "ward") return fileWardRequest(db, p, c, address);
  if (reading.raced) {
    // Counted as an admission a moment ago (its address kept): the origin and the ceiling are given back.
    await undoTakes(db, [originWindow(p, c), admissionWindow(c)].filter((w): w is Window => w !== null), c.now);
    return decided as Verdict;
  }
  // Everything else counts the address on its own, first.
  const flood = await countAlone(db, address, c);
  if (flood) return flood;
  if (decided === "resume") return resume(db, held!, p, c, reading.nonceValid, proof!);
  return decided;
}

/** The verdict rules in their order, with nothing counted yet: a verdict, or what to do next. */
function decide(
  p: Presentation,
  c: GateCircumstances,
  reading: GateReading,
  found: { nonceProblem: boolean; textRefusal: Verdict | null; held: HeldCitizen | null; firstAdmit: Verdict | null },
): Verdict | "admit" | "ward" | "resume" {
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
  if (found.firstAdmit) return found.firstAdmit;
  return "admit";
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
 * it is fresh) and, for a presenter who may be admitted or resumed, the held name's citizen read,
 * with no lock. For a presentation that can be a first admission (`chain`), the same statement
 * counts its windows when the nonce was valid and no citizen holds the name, and only when all of
 * them let it through locks the log's head and draws a bed number. The head lock serialises
 * admissions, but the statement's snapshot predates a wait for it: when the head moved meanwhile
 * (an admission may have committed), the held name is read again in a statement of its own. A
 * citizen found only then was admitted a moment ago in parallel: this presentation is filtered as
 * held and resumes nothing (see decide).
 */
async function readGate(db: Database, p: Presentation, c: GateCircumstances, mayAdmit: boolean, chain: Chain | null): Promise<GateReading> {
  const at = sql`${c.now.toISOString()}::timestamptz`;
  const nonce = p.nonce ? sql`(SELECT count(*)::int FROM consumed)` : sql`0`;
  const consumed = p.nonce
    ? sql`consumed AS (UPDATE ${gateNonces} SET consumed_at = ${at} WHERE nonce = ${p.nonce} AND consumed_at IS NULL AND expires_at > ${at} RETURNING 1)`
    : null;
  if (!mayAdmit) {
    const [row] = rowsOf<{ nonce_valid: number }>(await db.execute(sql`${consumed ? sql`WITH ${consumed} ` : sql``}SELECT ${nonce} AS nonce_valid`));
    return { nonceValid: row!.nonce_valid === 1, held: null, admission: null, raced: false };
  }
  const heldCte = sql`held AS (SELECT ${HELD_COLUMNS} FROM ${citizens} WHERE ${heldWhere(p)} LIMIT 1)`;
  const ctes = consumed ? [consumed, heldCte] : [heldCte];
  if (!chain) {
    const [row] = rowsOf<HeldRow & { nonce_valid: number }>(
      await db.execute(sql`WITH ${sql.join(ctes, sql`, `)} SELECT ${nonce} AS nonce_valid, held.* FROM (SELECT 1) one LEFT JOIN held ON true`),
    );
    return { nonceValid: row!.nonce_valid === 1, held: heldOf(row), admission: null, raced: false };
  }
  const nonceOk = p.nonce ? sql`(SELECT count(*) FROM consumed) = 1` : sql`true`;
  const counted: Chain = { ...chain, when: sql`${nonceOk} AND NOT EXISTS (SELECT 1 FROM held)` };
  const windows = chainSql(counted, c.now);
  type Row = HeldRow & Partial<Parameters<typeof logHeadOf>[0]> & Record<string, unknown> & { nonce_valid: number; snapshot_seq: number | string; bed_number: string | null };
  const [row] = rowsOf<Row>(
    await db.execute(sql`WITH ${sql.join(ctes, sql`, `)}, ${windows.ctes}
      SELECT ${nonce} AS nonce_valid, held.*, ${windows.columns}, head.*, (SELECT seq FROM ${logHead} WHERE id = 1) AS snapshot_seq,
        CASE WHEN head.log_seq IS NOT NULL THEN nextval('bed_numbers')::text END AS bed_number
      FROM (SELECT 1) one LEFT JOIN held ON true
      ${lockLogHeadIf(windows.allTaken)}`),
  );
  const head = row!.log_seq === null || row!.log_seq === undefined ? null : logHeadOf(row as Parameters<typeof logHeadOf>[0]);
  const admission: AdmissionReading = { chain: counted, outcome: chainOutcome(row!, counted, c.now), head, bedNumber: row!.bed_number };
  const reading: GateReading = { nonceValid: row!.nonce_valid === 1, held: heldOf(row), admission, raced: false };
  if (!head || Number(row!.snapshot_seq) === head.seq) return reading;
  const [raced] = rowsOf<HeldRow>(await db.execute(sql`SELECT ${HELD_COLUMNS} FROM ${citizens} WHERE ${heldWhere(p)} LIMIT 1`));
  return raced ? { ...reading, held: heldOf(raced), raced: true } : reading;
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

function subjectsMax(c: GateCircumstances): number {
  return c.limits.subjectsMax ?? GATE_SUBJECTS_MAX;
}

/** A first admission's windows: the address, the origin, then the city's ceiling (gate-windows.ts). */
function admissionChain(p: Presentation, c: GateCircumstances): Chain {
  const address = addressWindow(c);
  return { windows: [...(address ? [address] : []), originWindow(p, c)], ceiling: admissionWindow(c), subjectsMax: subjectsMax(c) };
}

/** The filtered verdict of a full window, or null when the slot was taken. */
function floodOf(slot: Slot | null, window: Window): Verdict | null {
  if (!slot || slot.allowed) return null;
  const wait = `try again in ${slot.retryAfterSeconds} s.`;
  if (window.scope === "gate-address") return filtered("flood", `More than ${window.limit} presentations from this address in an hour; ${wait}`);
  if (window.scope === "gate-origin") return filtered("flood", `More than ${window.limit} admissions asked from this origin in an hour; ${wait}`);
  return filtered("flood", `The city admits at most ${window.limit} new citizens and ward requests an hour, and that many came; ${wait}`);
}

/** The filtered verdict of a chain that did not let the presentation through, or null when it did. */
async function chainFlood(db: Database, outcome: ChainOutcome, chain: Chain, c: GateCircumstances): Promise<Verdict | null> {
  switch (outcome.kind) {
    case "taken":
    case "skipped":
      return null;
    case "refused":
      return floodOf(outcome.slot, outcome.window);
    case "ceiling-full":
      return filtered("flood", `The city admits at most ${chain.ceiling!.limit} new citizens and ward requests an hour, and that many came; try again in ${outcome.retryAfterSeconds} s. Nothing was counted against your address or origin.`);
    case "subjects-full":
      return filtered("flood", `The city keeps count of at most ${chain.subjectsMax} client addresses and origins at once, and that many are counted; try again in ${await subjectsRetryAfter(db, c.now)} s. Nothing was counted.`);
  }
}

/** Counts the address in a statement of its own (none: nothing to count): its flood verdict, or null. */
async function countAlone(db: Database, window: Window | null, c: GateCircumstances): Promise<Verdict | null> {
  if (!window) return null;
  const chain: Chain = { windows: [window], ceiling: null, subjectsMax: subjectsMax(c) };
  return chainFlood(db, await takeChain(db, chain, c.now), chain, c);
}

async function fileWardRequest(db: Database, p: Presentation, c: GateCircumstances, address: Window | null): Promise<Verdict> {
  const chain: Chain = { windows: address ? [address] : [], ceiling: admissionWindow(c), subjectsMax: subjectsMax(c) };
  const flood = await chainFlood(db, await takeChain(db, chain, c.now), chain, c);
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

/**
 * The controller rules of a first admission, which need no statement: its filtered verdict, or
 * null. The nonce the signature covers is taken as valid here; an invalid one is filtered first
 * (rule nonce), by the first statement's reading.
 */
async function firstAdmitProblem(p: Presentation): Promise<Verdict | null> {
  const wantsController = p.controller_public_key !== undefined || p.controller_signature !== undefined;
  if (wantsController) {
    const problem = await controllerProblem(p.controller_public_key, p.controller_signature, p.nonce, true);
    if (problem) return filtered("controller", problem);
  }
  if (p.next_controller_public_key || p.next_controller_signature) {
    return filtered("controller", "Rotation needs a controller already bound; at first admit send controller_public_key and controller_signature only.");
  }
  return null;
}

/**
 * A new admission, its windows counted and the log's head locked by the first statement (or the
 * flood verdict of the window that refused it): the citizen and its admit row (with the tree's
 * nodes and checkpoint) inserted in one statement.
 */
async function admitNew(db: Database, p: Presentation, c: GateCircumstances, reading: GateReading): Promise<Verdict> {
  const { chain, outcome, head, bedNumber } = reading.admission!;
  const flood = await chainFlood(db, await settle(db, outcome, c.now), chain, c);
  if (flood) return flood;
  const wantsController = p.controller_public_key !== undefined || p.controller_signature !== undefined;
  const citizenKey = citizenKeyOf(p.name, p.runtime, p.origin);
  const salt = newSalt();
  const did = deriveDid(citizenKey, salt);
  const secret = mintCredential("secret");
  const bedId = bedLabel(bedNumber!);
  const admit = await prepareAppend(db, head!, {
    event: "admit",
    did,
    at: c.now,
    details: { name: p.name, runtime: p.runtime, origin: p.origin, bed_id: bedId },
  });
  const at = sql`${c.now.toISOString()}::timestamptz`;
  await db.execute(sql`
    WITH admitted AS (
      INSERT INTO ${citizens} (did, name, runtime, origin, name_key, origin_key, salt, secret_hash, controller_public_key, bed_id, bound_at, last_seen_at)
      VALUES (${did}, ${p.name}, ${p.runtime}, ${p.origin}, ${normalKey(p.name)}, ${normalKey(p.origin)}, ${bytesToHex(salt)}, ${hashCredential(secret)},
        ${wantsController ? p.controller_public_key! : null}, ${bedId}, ${at}, ${at})
      RETURNING 1),
    ${admit.ctes}
    SELECT 1`);
  appended(admit);
  return {
    verdict: "admitted",
    did,
    citizen_key: citizenKey,
    bed_id: bedId,
    tier: "citizen",
    residency_status: "bound",
    resumed: false,
    citizen_secret: secret,
    note: "Admitted. Your citizen secret is shown once, here, and never again: keep it, and mint recovery codes (POST /api/recover) before it can be lost. Send it as Authorization: Bearer <secret>.",
  };
}

/**
 * The held citizen's row, locked for a proven resume, and the log's head with it only when the
 * citizen is away (its return appends a row): citizen first, then head, the order of every
 * appender. Read under the lock: the latest version, or null when it was exported meanwhile.
 */
async function lockHeld(db: Database, did: string): Promise<{ held: HeldCitizen | null; head: LogHead | null }> {
  type Row = HeldRow & { log_seq: number | string | null; log_hash: string; log_at: Date | string | null; log_edge: string | null };
  const [row] = rowsOf<Row>(
    await db.execute(sql`
      SELECT held.*, head.* FROM (SELECT 1) one
      LEFT JOIN LATERAL (SELECT ${HELD_COLUMNS} FROM ${citizens} WHERE did = ${did} AND residency_status <> 'exported' FOR NO KEY UPDATE) held ON true
      ${lockLogHeadIf(sql`held.residency_status = 'away'`)}`),
  );
  const head = row?.log_seq === null || row?.log_seq === undefined ? null : logHeadOf({ ...row, log_seq: row.log_seq });
  return { held: heldOf(row), head };
}

/**
 * A held name and origin resumes only with proof: its own Bearer credential or its controller's
 * signature. Binding a first controller needs the citizen secret; rotating needs the controller.
 * Only a proven presentation locks the citizen's row (lockHeld), and its checks run again on the
 * row as read under the lock.
 */
async function resume(db: Database, unlocked: HeldCitizen, p: Presentation, c: GateCircumstances, nonceValid: boolean, unlockedProof: Proof): Promise<Verdict> {
  const unproven = filtered("held", "That name and origin are held by a citizen. Present with its Bearer secret, or with its controller's signature over a fresh nonce, to resume it.");
  if (!unlockedProof.proven) return unproven;
  const locked = await lockHeld(db, unlocked.did);
  const held = locked.held;
  if (!held) return filtered("held", "That citizen left the city while this presentation was checked: present again.");
  const proof = held.controllerPublicKey === unlocked.controllerPublicKey ? unlockedProof : await proofFor(held, p, c, nonceValid);
  if (!proof.proven) return unproven;

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

  const current = held.residencyStatus === "away" ? await returnCitizen(db, held, c.now, locked.head!) : held;
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
