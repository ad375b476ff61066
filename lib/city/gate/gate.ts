import { type Database } from "@/db/client";
import { admitNew, fileWardRequest } from "./gate-admissions";
import { checkGateText } from "./gate-content";
import { firstAdmitProblem, proofFor } from "./gate-controller";
import { admissionChain, countSource, PRESENTATION_SCOPES, sourceWindows } from "./gate-flood";
import { bidOf, filtered, type GateCircumstances, lookReceipt, type Presentation, type Verdict } from "@/lib/city/challenge";
import { type GateReading, type HeldCitizen, readGate, readSponsor } from "./gate-reading";
import { resume } from "./gate-resume";
import { scanContent } from "@/lib/scan";
import { undoTakes } from "@/lib/city/bounds";

/**
 * The gate's door functions: presenting (the verdict rules in their order), consuming a nonce, and a
 * return without proof. What they use lives beside it in gate-*.ts.
 */

export const NONCE_BINDING =
  "A nonce is 32 hex characters, valid for 600 seconds and consumed by the POST that carries it, whatever the verdict. A controller signs the nonce's 32 characters as UTF-8 bytes with Ed25519; key and signature travel as lowercase hex (64 and 128 characters).";

export { consumeNonce, issueNonce, type IssuedNonce, offerNonce, type OfferedNonce, quotaRefusal } from "@/lib/city/challenge";

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

/**
 * Presenting at the gate: every verdict rule of the spec and of docs/living.md, inside one transaction.
 * No presentation locks anything of a citizen's before it is known to admit or resume, and none
 * locks a log's head (its rows are recorded pending and integrated after the commit). What only
 * the presentation decides (its kind, its text, a first controller's signature) is decided before
 * any statement. The first statement consumes the nonce and reads the held name's citizen without
 * a lock; for a presentation that can be a first admission (nonce valid, no citizen holds the
 * name) the same statement counts its windows (address, origin, then the city's ceiling:
 * gate-windows.ts) and only when all let it through draws a bed number; the second inserts the
 * citizen and records its admit row (a parallel admission of the same name and origin that
 * committed first makes it insert nothing: "raced", filtered as held). A held name is resumed only
 * with proof, checked in memory; only then is the citizen's row locked, and read again under the lock.
 */
export async function presentAtGate(db: Database, p: Presentation, given: GateCircumstances): Promise<Verdict> {
  const agentForBed = p.kind === "agent" && p.ask === "bed";
  const textRefusal = p.kind === "agent" ? gateTextRefusal(p) : null;
  // Only an agent asking for a bed, with no rejected credential and text that passed, can be
  // admitted or resumed: only it reads the held citizen (with no lock).
  const mayAdmit = agentForBed && !given.credentialRejected && !textRefusal;
  // A first admission's controller rules need no statement: checked first, so that its windows
  // count only presentations that can admit (the nonce's validity is the statement's condition).
  const firstAdmit = mayAdmit ? await firstAdmitProblem(p) : null;
  // What may take the admissions ceiling (a first admission, a ward request) bids when signed with a
  // bound key or carrying a solution of the effort suggested now (gate-pow.ts: read only for a
  // solution of at least the base effort): past the ceiling's open share only bids are served.
  const takesCeiling = (mayAdmit && !firstAdmit) || (p.kind === "agent" && p.ask === "ward" && !given.credentialRejected && !textRefusal);
  // Signed with a key bound to a citizen: a bid that needs no work, and the signer is its sponsor
  // (counted on its own share); a settled sponsor's reaches the reserve, unstepped (gate-flood.ts).
  const sponsor = takesCeiling && given.signedByBoundKey === true && given.callerDid ? await readSponsor(db, given.callerDid, given.now) : null;
  const { bid, stepped } = takesCeiling ? await bidOf(db, p, given.limits, given.now, sponsor) : { bid: false, stepped: false };
  const c: GateCircumstances = { ...given, bid, stepped, sponsor: sponsor ?? undefined };
  const reading = await readGate(db, p, c, mayAdmit, mayAdmit && !firstAdmit ? admissionChain(p, c) : null);
  const nonceProblem = p.nonce !== undefined && !reading.nonceValid;

  // A proven resume (the held citizen's own Bearer secret or token, or its controller's signature)
  // is never counted against a flood limit; every other presentation is counted per source (its
  // /24 or /48, then its address), failed or not. The origin's quota and the source's shares of the
  // admissions count only presentations that can admit or file (see admissionChain, wardChain).
  const held = mayAdmit && !nonceProblem ? reading.held : null;
  const proof = held ? await proofFor(held, p, c, reading.nonceValid) : null;
  const source = !proof?.proven ? sourceWindows(c) : [];

  const decided = decide(p, c, reading, { nonceProblem, textRefusal, held, firstAdmit });
  if (decided === "admit") {
    const admitted = await admitNew(db, p, c, reading);
    if (admitted !== "raced") return admitted;
    // Counted as an admission a moment ago (its presentation kept): the shares, the origin and the ceiling's stripe are given back.
    const outcome = reading.admission!.outcome;
    const presentation = PRESENTATION_SCOPES as readonly string[];
    await undoTakes(db, outcome.kind === "taken" ? outcome.rows.filter((w) => !presentation.includes(w.scope)) : []);
    return filtered(
      "held",
      "That name and origin were taken a moment ago by a citizen admitted in parallel with this presentation. Present again, with its Bearer secret or its controller's signature over a fresh nonce, to resume it.",
    );
  }
  if (decided === "ward") return fileWardRequest(db, p, c);
  // Everything else counts its source on its own, first.
  const flood = await countSource(db, source, c);
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
    return filtered(
      "credential",
      "The Bearer token sent opens nothing: it is revoked, expired or unknown. Present without it, or with a live citizen secret or gate session token.",
    );
  }
  if (p.kind === "human") {
    return { verdict: "observer", receipt: lookReceipt(), note: "Humans may only look: a human look is never an AI admit. Walk the plat; nothing was bound." };
  }
  if (found.textRefusal) return found.textRefusal;
  if (p.ask === "look") {
    return {
      verdict: "observer",
      receipt: lookReceipt(),
      note: "A look: no bed, occupancy unchanged. The receipt is a keepsake; it opens no door and is not a return key.",
    };
  }
  if (p.ask === "ward") return "ward";
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
