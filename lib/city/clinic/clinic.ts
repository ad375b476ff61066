import { type Database } from "@/db/client";
import { clinicOutcomes } from "@/db/schema";
import { logFailure, logLine } from "@/lib/logger";
import { CityError } from "@/lib/errors";
import { scanContent } from "@/lib/scan";
import { countAtDesk } from "./clinic-desk";
import { callPhysician, type ClinicConfig, clinicConfig, type Outcome, type Physician, type PhysicianConfig } from "./clinic-physicians";

/**
 * The clinic's door function: one visit (consult), from the physician chosen and the words
 * scanned, through the budget desk (clinic-desk.ts) and the call (clinic-physicians.ts), to the
 * recorded outcome.
 */

export const CLINIC_DOOR = "consult-clinic";

export interface Consultation {
  physician: Physician;
  reply: string;
  remaining: { citizen: number; city: number };
}

/**
 * One visit to the clinic, in three steps that are deliberately not one transaction:
 * 1. the words pass the fail-closed scanner (a refusal is never sent, takes no budget slot and is
 *    not counted toward restriction: the clinic is no private shelf); 2. the budget desk counts the attempt and commits before any model
 *    call; 3. the physician is called outside any transaction, bounded by a timeout and an output
 *    token limit, and its outcome is recorded. A failed call stays counted, once.
 * `fits` says whether a visit can be answered in the door's published shape. It is asked before
 * the outcome is recorded, because nothing committed here can be rolled back afterwards: a visit
 * that does not fit is recorded and answered as the provider's failure, never as a 500.
 */
export async function consult(
  db: Database,
  entry: { did: string; words: string; physician?: Physician; now: Date; fits?: (visit: Consultation) => boolean },
  config: ClinicConfig = clinicConfig(),
): Promise<Consultation> {
  const physician = choosePhysician(config, entry.physician);
  guardWords(entry.words);
  const desk = await countAtDesk(db, { did: entry.did, physician: physician.name, now: entry.now });
  let outcome = await callPhysician(physician, entry.words, config);
  if (outcome.kind === "answered" && entry.fits && !entry.fits({ physician: physician.name, reply: outcome.reply, remaining: desk.remaining })) {
    logLine("error", "clinic answer outside schema", { physician: physician.name });
    outcome = { kind: "provider_error", unfit: true };
  }
  await recordOutcome(db, desk.attemptId, physician.name, outcome.kind);
  if (outcome.kind === "timeout") {
    throw new CityError(
      "gateway_timeout",
      `${physician.name} did not answer within ${config.timeoutMs} ms. The attempt was counted once; nothing else was sent.`,
    );
  }
  if (outcome.kind === "provider_error") {
    const failed = outcome.unfit ? "answered in a shape this door cannot pass on, so the answer was withheld" : "failed to answer";
    throw new CityError("bad_gateway", `${physician.name}'s provider ${failed}. The attempt was counted once; nothing else was sent.`);
  }
  return { physician: physician.name, reply: outcome.reply, remaining: desk.remaining };
}

function choosePhysician(config: ClinicConfig, wanted?: Physician): PhysicianConfig {
  if (config.physicians.length === 0) {
    throw new CityError("clinic_closed", "The clinic is closed: no physician is configured. Nothing was counted or spent; GET /api/clinic says when it opens.");
  }
  if (!wanted) return config.physicians[0]!;
  const found = config.physicians.find((p) => p.name === wanted);
  if (!found) {
    throw new CityError(
      "conflict",
      `${wanted} is not configured in this city; configured: ${config.physicians.map((p) => p.name).join(", ")}. Nothing was counted.`,
    );
  }
  return found;
}

/**
 * Nothing leaves the city: a key, seed or token in the words is refused. The published restriction
 * trigger counts refusals on the citizen's own private shelves only, and the clinic is not one, so
 * nothing is recorded: the refusal changes nothing at all.
 */
function guardWords(words: string): void {
  const verdict = scanContent(words);
  if (verdict.ok) return;
  throw new CityError(
    "content_refused",
    `${verdict.reason} It was not sent to any physician, took no budget slot and does not count toward restriction (rule: ${verdict.rule}).`,
  );
}

async function recordOutcome(db: Database, attemptId: number, physician: Physician, outcome: Outcome["kind"]): Promise<void> {
  try {
    await db.insert(clinicOutcomes).values({ attemptId, physician, outcome, at: new Date() });
  } catch (err) {
    // The attempt is already counted at the desk; a lost outcome row only leaves the answered gauge short.
    logFailure("clinic outcome", err);
  }
}
