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
  /** CITY-POW/1: 16 lowercase hex, bound to the nonce, the name and the origin (gate-pow.ts). */
  pow_solution?: string;
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
   * At most this many rows of the gate's per-source and per-origin windows are kept, city-wide
   * (all are keyed by text the client chooses); past it a new subject is counted in a hashed
   * overflow bucket (gate-windows.ts), never refused for the table being full. Unset: GATE_SUBJECTS_MAX.
   */
  subjectsMax?: number;
  /** Presentations (and GET /gate nonces) per source prefix (an IPv4 /24, an IPv6 /48) per hour; 0 turns it off. Unset: off. */
  perPrefixPerHour?: number;
  /** The share (percent) of the admissions ceiling one /24 or /48 may take per hour. Unset: GATE_PREFIX_SHARE_PERCENT. */
  prefixSharePercent?: number;
  /** The share (percent) of the admissions ceiling one IPv6 /64 may take per hour, inside its /48's. Unset: GATE_HOST_SHARE_PERCENT. */
  hostSharePercent?: number;
  /** The part (percent) of the admissions ceiling kept for presentations signed by settled citizens. Unset: GATE_RESERVE_PERCENT. */
  reservePercent?: number;
}

export const GATE_PREFIX_SHARE_PERCENT = 5;
export const GATE_HOST_SHARE_PERCENT = 1;
/** At least a fifth of the admissions ceiling is out of reach of presentations without a proven key (issue 43). */
export const GATE_RESERVE_PERCENT = 20;

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
  /**
   * The request was signed with a key bound to a citizen (CITY-SIG/1), the caller: past the open share
   * of the admissions ceiling it needs no work (docs/pow.md).
   */
  signedByBoundKey?: boolean;
  /**
   * Set by presentAtGate for a signed presentation: the citizen whose key signed it (callerDid), and
   * whether it was settled then (admitted NEWCOMER_SECONDS ago or more). Only a settled sponsor's
   * presentation reaches the reserve, unstepped; a newcomer's is a bid served in steps, as a keyless one.
   * `network`: the network (/24, /48) the sponsor was admitted from, where it was recorded: the
   * sponsors of one network share one part of the ceiling.
   */
  sponsor?: { did: string; settled: boolean; network?: string | null };
  /**
   * Set by presentAtGate: a bid served in steps now, the ceiling's open share being taken as read (a
   * suggested effort above 0) and the bid not a settled sponsor's; it counts on its network's share
   * of a step (gate-flood.ts). Below the open share a bid takes what anyone may and counts on none.
   */
  stepped?: boolean;
  /**
   * Set by presentAtGate: the presentation bids (a pow_solution of at least the suggested effort,
   * gate-pow.ts) or is signed with a bound key, so it may reach past the ceiling's open share.
   */
  bid?: boolean;
}

/** What a refusal of a full window says beside its reason: when to try again and at what effort. */
export interface RetryAdvice {
  retry_after_seconds: number;
  /** The suggested proof-of-work effort (issue 43, item 6), when the gate suggests one. */
  suggested_effort?: number;
}

export type Verdict =
  | ({ verdict: "filtered"; rule: string; reason: string; note: string } & Partial<RetryAdvice>)
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

export const filtered = (rule: string, reason: string, advice?: RetryAdvice): Verdict => ({
  verdict: "filtered",
  rule,
  reason,
  note: "Filtered is a verdict, not a failure: nothing was admitted and nothing changed but the spent nonce and the counted attempt.",
  ...advice,
});

export function lookReceipt(): string {
  return `look_${bytesToHex(randomBytes(16))}`;
}
