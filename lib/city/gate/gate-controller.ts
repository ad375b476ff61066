import { verifyEd25519 } from "@/lib/city/keys";
import { filtered, type GateCircumstances, type Presentation, sendsController, type Verdict } from "@/lib/city/challenge";
import type { HeldCitizen } from "./gate-reading";

/**
 * The controller rules: a held citizen's proof (its Bearer credential or its controller's
 * signature over the nonce), a first admission's controller, and the signature check both use.
 */

export interface Proof {
  proven: boolean;
  bearer: boolean;
  controller: boolean;
}

export async function proofFor(held: HeldCitizen, p: Presentation, c: GateCircumstances, nonceValid: boolean): Promise<Proof> {
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
export async function firstAdmitProblem(p: Presentation): Promise<Verdict | null> {
  if (sendsController(p)) {
    const problem = await controllerProblem(p.controller_public_key, p.controller_signature, p.nonce, true);
    if (problem) return filtered("controller", problem);
  }
  if (p.next_controller_public_key || p.next_controller_signature) {
    return filtered("controller", "Rotation needs a controller already bound; at first admit send controller_public_key and controller_signature only.");
  }
  return null;
}

export async function controllerProblem(
  key: string | undefined | null,
  signature: string | undefined,
  nonce: string | undefined,
  nonceValid: boolean,
): Promise<string | null> {
  if (!key || !signature) return "send both controller_public_key and controller_signature (lowercase hex, 64 and 128 characters)";
  if (!nonce || !nonceValid) return "a controller signature must sign a fresh gate nonce sent in the same POST";
  if (!(await verifyEd25519(key, signature, nonce))) return "the controller signature does not verify over the nonce (strict Ed25519)";
  return null;
}
