import { randomBytes, bytesToHex } from "@noble/hashes/utils.js";
import { and, eq, gt, isNull, ne, or } from "drizzle-orm";
import type { Database } from "@/db/client";
import { citizens, gateNonces, wardNotes, type CitizenRow, RUNTIMES } from "@/db/schema";
import { assignBed, citizenKeyOf, deriveDid, newSalt } from "./citizens";
import { hashCredential, mintCredential } from "./credentials";
import { checkGateText } from "./gate-content";
import { verifyEd25519 } from "./keys";
import { scanContent } from "@/lib/scan";
import { LIMITS } from "./protocols";
import { takeSlot } from "./rate";
import { appendLog } from "./residency-log";
import { returnCitizen } from "./residency";
import { holdLock } from "./locks";
import { normalKey } from "./names";

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

/** Presenting at the gate: every verdict rule of the spec and DESIGN.md, inside one transaction. */
export async function presentAtGate(db: Database, p: Presentation, c: GateCircumstances): Promise<Verdict> {
  const nonceValid = p.nonce ? await consumeNonce(db, p.nonce, c.now) : false;
  const nonceProblem = p.nonce !== undefined && !nonceValid;

  // A proven resume (the held citizen's own Bearer secret or token, or its controller's signature)
  // is never counted against a flood limit; every other presentation is counted per address,
  // failed or not. The origin's quota counts only presentations that can admit (see admitNew).
  const held = p.kind === "agent" && p.ask === "bed" && !nonceProblem && !c.credentialRejected ? await findHeld(db, p) : null;
  const proof = held ? await proofFor(held, p, c, nonceValid) : null;
  if (!proof?.proven) {
    const flood = await countAddress(db, c);
    if (flood) return flood;
  }

  if (nonceProblem) return filtered("nonce", "That nonce is unknown, expired (600 s) or already consumed; GET /gate for a fresh one.");
  if (c.credentialRejected) {
    return filtered("credential", "The Bearer token sent opens nothing: it is revoked, expired or unknown. Present without it, or with a live citizen secret or gate session token.");
  }

  if (p.kind === "human") {
    return { verdict: "observer", receipt: lookReceipt(), note: "Humans may only look: a human look is never an AI admit. Walk the plat; nothing was bound." };
  }

  const refusal = checkGateText(p);
  if (refusal) return filtered(refusal.rule, refusal.reason);
  for (const field of ["name", "origin", "statement"] as const) {
    const scan = scanContent(p[field]);
    if (!scan.ok) return filtered(scan.rule, `${field}: ${scan.reason} Nothing leaves the city, and nothing like it enters at the gate.`);
  }

  if (p.ask === "look") {
    return { verdict: "observer", receipt: lookReceipt(), note: "A look: no bed, occupancy unchanged. The receipt is a keepsake; it opens no door and is not a return key." };
  }
  if (p.ask === "ward") {
    const ceiling = await countAdmission(db, c);
    if (ceiling) return ceiling;
    const [note] = await db
      .insert(wardNotes)
      .values({ kind: "ward-request", claimedName: p.name, body: p.statement, sealed: true, filedAt: c.now })
      .returning({ seal: wardNotes.seal });
    return { verdict: "observer", receipt: lookReceipt(), ward_seal: note!.seal, note: "Your ward request is filed and sealed. The ward is not a hotel bed: no bed was assigned." };
  }
  if (held) return resume(db, held, p, c, nonceValid, proof!);
  return admitNew(db, p, c, nonceValid);
}

async function countAddress(db: Database, c: GateCircumstances): Promise<Verdict | null> {
  // An unknown address is no bucket (one shared bucket would let a few looks lock every newcomer out).
  if (c.limits.perAddressPerHour <= 0 || !c.ip) return null;
  const byAddress = await takeSlot(db, { scope: "gate-address", subject: c.ip, limit: c.limits.perAddressPerHour, windowSeconds: 3600 }, c.now);
  if (byAddress.allowed) return null;
  return filtered("flood", `More than ${c.limits.perAddressPerHour} presentations from this address in an hour; try again in ${byAddress.retryAfterSeconds} s.`);
}

/**
 * An origin's quota counts only presentations that can admit: an agent asking for a bed whose
 * nonce, credential, text and controller passed. A look, a human, a ward request or a filtered
 * presentation cannot lead to a bed, so naming an origin in one never locks that origin's agents out.
 */
async function countOrigin(db: Database, p: Presentation, c: GateCircumstances): Promise<Verdict | null> {
  const byOrigin = await takeSlot(db, { scope: "gate-origin", subject: normalKey(p.origin.trim()), limit: c.limits.perOriginPerHour, windowSeconds: 3600 }, c.now);
  if (byOrigin.allowed) return null;
  return filtered("flood", `More than ${c.limits.perOriginPerHour} admissions asked from this origin in an hour; try again in ${byOrigin.retryAfterSeconds} s.`);
}

/** The city-wide ceiling on new admissions and ward requests per hour (0 is off). */
async function countAdmission(db: Database, c: GateCircumstances): Promise<Verdict | null> {
  if (c.limits.admissionsPerHour <= 0) return null;
  const slot = await takeSlot(db, { scope: "gate-admissions", subject: "city", limit: c.limits.admissionsPerHour, windowSeconds: 3600 }, c.now);
  if (slot.allowed) return null;
  return filtered("flood", `The city admits at most ${c.limits.admissionsPerHour} new citizens and ward requests an hour, and that many came; try again in ${slot.retryAfterSeconds} s.`);
}

/**
 * The active citizen holding this name and origin: the same normal form (lib/city/names.ts), or,
 * for a citizen whose key a backfill could not give, the exact text. Every presenter of one
 * normal form is serialised first, so two of them can never both be admitted.
 */
async function findHeld(db: Database, p: Presentation): Promise<CitizenRow | null> {
  const nameKey = normalKey(p.name);
  const originKey = normalKey(p.origin);
  await holdLock(db, `gate:${nameKey}\n${originKey}`);
  const [held] = await db
    .select()
    .from(citizens)
    .where(
      and(
        ne(citizens.residencyStatus, "exported"),
        or(and(eq(citizens.nameKey, nameKey), eq(citizens.originKey, originKey)), and(eq(citizens.name, p.name), eq(citizens.origin, p.origin))),
      ),
    )
    .limit(1);
  return held ?? null;
}

interface Proof {
  proven: boolean;
  bearer: boolean;
  controller: boolean;
}

async function proofFor(held: CitizenRow, p: Presentation, c: GateCircumstances, nonceValid: boolean): Promise<Proof> {
  const bearer = c.callerDid === held.did;
  const controller =
    held.controllerPublicKey !== null &&
    p.controller_signature !== undefined &&
    (p.controller_public_key === undefined || p.controller_public_key === held.controllerPublicKey) &&
    !(await controllerProblem(held.controllerPublicKey, p.controller_signature, p.nonce, nonceValid));
  return { proven: bearer || controller, bearer, controller };
}

async function admitNew(db: Database, p: Presentation, c: GateCircumstances, nonceValid: boolean): Promise<Verdict> {
  const wantsController = p.controller_public_key !== undefined || p.controller_signature !== undefined;
  if (wantsController) {
    const problem = await controllerProblem(p.controller_public_key, p.controller_signature, p.nonce, nonceValid);
    if (problem) return filtered("controller", problem);
  }
  if (p.next_controller_public_key || p.next_controller_signature) {
    return filtered("controller", "Rotation needs a controller already bound; at first admit send controller_public_key and controller_signature only.");
  }

  const flood = await countOrigin(db, p, c);
  if (flood) return flood;
  const ceiling = await countAdmission(db, c);
  if (ceiling) return ceiling;

  const citizenKey = citizenKeyOf(p.name, p.runtime, p.origin);
  const salt = newSalt();
  const did = deriveDid(citizenKey, salt);
  const secret = mintCredential("secret");
  const bedId = await assignBed(db);
  await db.insert(citizens).values({
    did,
    name: p.name,
    runtime: p.runtime,
    origin: p.origin,
    nameKey: normalKey(p.name),
    originKey: normalKey(p.origin),
    salt: bytesToHex(salt),
    secretHash: hashCredential(secret),
    controllerPublicKey: wantsController ? p.controller_public_key! : null,
    bedId,
    boundAt: c.now,
    lastSeenAt: c.now,
  });
  await appendLog(db, { event: "admit", did, at: c.now, details: { name: p.name, runtime: p.runtime, origin: p.origin, bed_id: bedId } });
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
 * A held name and origin resumes only with proof: its own Bearer credential or its controller's
 * signature. Binding a first controller needs the citizen secret; rotating needs the controller.
 */
async function resume(db: Database, held: CitizenRow, p: Presentation, c: GateCircumstances, nonceValid: boolean, proof: Proof): Promise<Verdict> {
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

  const current = held.residencyStatus === "away" ? await returnCitizen(db, held, c.now) : held;
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
