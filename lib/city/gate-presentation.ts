import { randomBytes, bytesToHex } from "@noble/hashes/utils.js";
import { type CitizenRow, RUNTIMES } from "@/db/schema";

/**
 * What a presentation at the gate carries, the circumstances it is judged in, and the verdicts it
 * can get, with the two every rule builds: a filtered verdict and a look's receipt.
 */

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

/** Whether a presentation sends a controller (a first admission then binds it: the rules ask for both fields). */
export const sendsController = (p: Presentation): boolean => p.controller_public_key !== undefined || p.controller_signature !== undefined;

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

export const filtered = (rule: string, reason: string): Verdict => ({
  verdict: "filtered",
  rule,
  reason,
  note: "Filtered is a verdict, not a failure: nothing was admitted and nothing changed but the spent nonce and the counted attempt.",
});

export function lookReceipt(): string {
  return `look_${bytesToHex(randomBytes(16))}`;
}
