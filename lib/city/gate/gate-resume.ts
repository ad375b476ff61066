import { eq, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { citizens } from "@/db/schema";
import { citizenKeyOf } from "@/lib/city/directory";
import { controllerProblem, type Proof, proofFor } from "./gate-controller";
import { filtered, type GateCircumstances, type Presentation, type Verdict } from "@/lib/city/challenge";
import { HELD_COLUMNS, type HeldCitizen, heldOf, type HeldRow } from "./gate-reading";
import { returnCitizen } from "@/lib/city/residency";
import { appendIdentityLog } from "@/lib/city/logs/identity-log";
import { cancelOpenSteps, commitmentAfterMove, uncommittedProblem, jwkThumbprint } from "@/lib/city/keys";

/** A held name and origin resumed: the citizen's row locked once the presentation is proven, then checked again under the lock. */

/**
 * The held citizen's row, locked for a proven resume (its return, if away, records its row pending:
 * no lock of the log's). Read under the lock: the latest version, or null when it was exported meanwhile.
 */
async function lockHeld(db: Database, did: string): Promise<{ held: HeldCitizen | null }> {
  const [row] = rowsOf<HeldRow>(
    await db.execute(sql`
      SELECT held.* FROM (SELECT 1) one
      LEFT JOIN LATERAL (SELECT ${HELD_COLUMNS} FROM ${citizens} WHERE did = ${did} AND residency_status <> 'exported' FOR NO KEY UPDATE) held ON true`),
  );
  return { held: heldOf(row) };
}

/**
 * The gate binds or rotates a controller: a committed key consumes its hash (the gate commits no
 * new ones), and the identity log records the move in the same transaction.
 */
async function moveController(db: Database, held: HeldCitizen, key: string, now: Date): Promise<void> {
  await db
    .update(citizens)
    .set({ controllerPublicKey: key, nextKeyHashes: commitmentAfterMove(held.nextKeyHashes, key) })
    .where(eq(citizens.did, held.did));
  const to = jwkThumbprint(key);
  const details = { via: "gate", to, public_key: key, ...(held.controllerPublicKey ? { from: jwkThumbprint(held.controllerPublicKey) } : {}) };
  // A move to a committed key outranks every credential: whatever step waits is cancelled (the step's row, then the identity log's entry).
  if (held.nextKeyHashes) await cancelOpenSteps(db, held.did, now, "rotated");
  await appendIdentityLog(db, { event: held.controllerPublicKey ? "key-rotated" : "key-bound", did: held.did, at: now, details });
}

/**
 * A held name and origin resumes only with proof: its own Bearer credential or its controller's
 * signature. Binding a first controller needs the citizen secret; rotating needs the controller.
 * Only a proven presentation locks the citizen's row (lockHeld), and its checks run again on the
 * row as read under the lock.
 */
export async function resume(
  db: Database,
  unlocked: HeldCitizen,
  p: Presentation,
  c: GateCircumstances,
  nonceValid: boolean,
  unlockedProof: Proof,
): Promise<Verdict> {
  const unproven = filtered(
    "held",
    "That name and origin are held by a citizen. Present with its Bearer secret, or with its controller's signature over a fresh nonce, to resume it.",
  );
  if (!unlockedProof.proven) return unproven;
  const locked = await lockHeld(db, unlocked.did);
  const held = locked.held;
  if (!held) return filtered("held", "That citizen left the city while this presentation was checked: present again.");
  const proof = held.controllerPublicKey === unlocked.controllerPublicKey ? unlockedProof : await proofFor(held, p, c, nonceValid);
  if (!proof.proven) return unproven;

  let controllerKey = held.controllerPublicKey;
  if (p.next_controller_public_key || p.next_controller_signature) {
    if (!proof.controller) return filtered("controller", "Rotation needs the current controller's signature over a fresh nonce.");
    const problem =
      (await controllerProblem(p.next_controller_public_key, p.next_controller_signature, p.nonce, nonceValid)) ??
      uncommittedProblem(held.nextKeyHashes, p.next_controller_public_key!);
    if (problem) return filtered("controller", `next controller: ${problem}`);
    controllerKey = p.next_controller_public_key!;
  } else if (held.controllerPublicKey === null && p.controller_public_key !== undefined) {
    if (c.credential !== "secret") {
      return filtered(
        "controller",
        "Binding a controller needs the citizen secret (city_sk_) as the Bearer token: " +
          "a gate session token is a lesser credential and never binds or rotates a controller.",
      );
    }
    const problem =
      (await controllerProblem(p.controller_public_key, p.controller_signature, p.nonce, nonceValid)) ??
      uncommittedProblem(held.nextKeyHashes, p.controller_public_key);
    if (problem) return filtered("controller", problem);
    controllerKey = p.controller_public_key;
  }
  if (controllerKey !== held.controllerPublicKey) await moveController(db, held, controllerKey!, c.now);

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
