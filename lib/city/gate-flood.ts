import { type Database } from "@/db/client";
import { filtered, GATE_SUBJECTS_MAX, type GateCircumstances, type Presentation, type Verdict } from "./gate-presentation";
import { type Chain, type ChainOutcome, subjectsRetryAfter, takeChain } from "./gate-windows";
import { cityWindow, type Slot, type Window } from "./rate";
import { normalKey } from "./names";

/**
 * The gate's flood rule: the windows a presentation is counted in (its address, its origin, the
 * city's ceiling) and the filtered verdict of one that is full.
 */

export function addressWindow(c: GateCircumstances): Window | null {
  // An unknown address is no bucket (one shared bucket would let a few looks lock every newcomer out).
  if (c.limits.perAddressPerHour <= 0 || !c.ip) return null;
  return { scope: "gate-address", subject: c.ip, limit: c.limits.perAddressPerHour, windowSeconds: 3600 };
}

/**
 * An origin's quota counts only presentations that can admit: an agent asking for a bed whose
 * nonce, credential, text and controller passed. A look, a human, a ward request or a filtered
 * presentation cannot lead to a bed, so naming an origin in one never locks that origin's agents out.
 */
export function originWindow(p: Presentation, c: GateCircumstances): Window {
  return { scope: "gate-origin", subject: normalKey(p.origin.trim()), limit: c.limits.perOriginPerHour, windowSeconds: 3600 };
}

/** The city-wide ceiling on new admissions and ward requests per hour (0 is off). */
export function admissionWindow(c: GateCircumstances): Window | null {
  if (c.limits.admissionsPerHour <= 0) return null;
  return cityWindow("gate-admissions", c.limits.admissionsPerHour, 3600);
}

export function subjectsMax(c: GateCircumstances): number {
  return c.limits.subjectsMax ?? GATE_SUBJECTS_MAX;
}

/** A first admission's windows: the address, the origin, then the city's ceiling (gate-windows.ts). */
export function admissionChain(p: Presentation, c: GateCircumstances): Chain {
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
export async function chainFlood(db: Database, outcome: ChainOutcome, chain: Chain, c: GateCircumstances): Promise<Verdict | null> {
  switch (outcome.kind) {
    case "taken":
    case "skipped":
      return null;
    case "refused":
      return floodOf(outcome.slot, outcome.window);
    case "ceiling-full":
      return filtered(
        "flood",
        `The city admits at most ${chain.ceiling!.limit} new citizens and ward requests an hour, and that many came; ` +
          `try again in ${outcome.retryAfterSeconds} s. Nothing was counted against your address or origin.`,
      );
    case "subjects-full":
      return filtered(
        "flood",
        `The city keeps count of at most ${chain.subjectsMax} client addresses and origins at once, and that many are counted; ` +
          `try again in ${await subjectsRetryAfter(db, c.now)} s. Nothing was counted.`,
      );
  }
}

/** Counts the address in a statement of its own (none: nothing to count): its flood verdict, or null. */
export async function countAlone(db: Database, window: Window | null, c: GateCircumstances): Promise<Verdict | null> {
  if (!window) return null;
  const chain: Chain = { windows: [window], ceiling: null, subjectsMax: subjectsMax(c) };
  return chainFlood(db, await takeChain(db, chain, c.now), chain, c);
}
