import { z } from "zod";
import { authorityOf, NEXT_KEYS_MAX, commitNextKeys, rotateToCommitted, RECOVERY_DELAY_HOURS, setRecoveryDelay } from "@/lib/city/keys";
import { PROTOCOLS } from "@/lib/city/protocols";
import { LogReceiptSchema } from "@/lib/city/logs/residency-log";
import { requireCitizenSecret } from "@/lib/doors/pipeline/caller";
import { door } from "@/lib/doors/door";
import { Hex64, iso, lowerHex, NowUtc, Timestamp } from "@/lib/doors/schemas";

/** The receipt of the identity log row a CITY-KEYS/1 answer appended (same format as the residency log's). */
export const IdentityReceipt = LogReceiptSchema.describe(
  "the identity log row's inclusion proof (RFC 9162) in a signed checkpoint of the identity log (origin <host>/identity-log): verifiable offline with /city-card.json's key",
);

const NextKeyHashes = z
  .array(lowerHex(64, "next key hash"))
  .max(NEXT_KEYS_MAX)
  .describe(`0 to ${NEXT_KEYS_MAX} lowercase hex SHA-256 digests of next keys' 32 raw Ed25519 bytes; an empty list turns pre-rotation off`);

const ROTATION_MESSAGE = "`CITY-KEYS/1|rotate|<did>|<old thumbprint or none>|<new thumbprint>|<nonce>`";

export const commitNextKeysDoor = door({
  name: "commit-next-keys",
  currentKeyOnly: true,
  method: "POST",
  path: "/api/keys/commit",
  summary:
    "CITY-KEYS/1 pre-rotation: with your citizen secret or a request signed with your controller key, commit the SHA-256 of 1 to 3 next keys; from then on your controller moves only to a committed key.",
  description:
    "Each hash is the lowercase hex SHA-256 of a next key's 32 raw Ed25519 bytes. Once committed, every path that moves the controller (the gate's next_controller_* rotation, POST /api/keys/rotate, a recovery) accepts only a committed key, whoever asks, and the commitment itself is changed or withdrawn only by a committed key, rotating (POST /api/keys/rotate): while one stands this door answers 403 to the secret and the controller key alike. A gate session token is refused (403). The commitment is recorded in the identity log.",
  auth: "citizen",
  whenRestricted: "open",
  // Not idempotent: a second commitment while one stands is 403, a second lowering 409.
  hints: { idempotent: false },
  input: z.strictObject({ next_key_hashes: NextKeyHashes }),
  output: z.object({
    now_utc: NowUtc,
    protocol: z.literal(PROTOCOLS.keys),
    did: Hex64,
    next_key_hashes: z.array(Hex64).nullable().describe("the commitment now standing; null: none"),
    identity_log_receipt: IdentityReceipt,
    note: z.string(),
  }),
  run: async (ctx, input) => {
    requireCitizenSecret(ctx.caller, "Committing next keys");
    const { committed, receipt } = await commitNextKeys(ctx.db, ctx.caller.did!, input.next_key_hashes, authorityOf(ctx.caller.credential), ctx.now);
    return {
      now_utc: iso(ctx.now),
      protocol: PROTOCOLS.keys,
      did: ctx.caller.did!,
      next_key_hashes: committed,
      identity_log_receipt: receipt,
      note: committed
        ? "Committed: your controller can now move only to one of these keys, by POST /api/keys/rotate signed with it. Keep the keys apart from your secret."
        : "Pre-rotation is off: no commitment stands.",
    };
  },
});

export const rotateKeyDoor = door({
  name: "rotate-key",
  method: "POST",
  path: "/api/keys/rotate",
  summary: `CITY-KEYS/1: rotate your controller to a committed next key, signed by that key alone over the UTF-8 of ${ROTATION_MESSAGE}; neither the old key nor the secret is needed.`,
  description: `Take a fresh nonce from GET /gate. The thumbprints are RFC 7638 (SHA-256, base64url) of the Ed25519 JWKs; the old one is \`none\` when no controller is bound. The key's SHA-256 must be in the commitment standing (POST /api/keys/commit): an uncommitted key is refused (403) whatever credentials come with it. The rotation commits next_key_hashes for the next move (an empty list turns pre-rotation off). The nonce is spent whether or not the rotation succeeds. Signed requests follow the controller: the old key's signatures stop at once (one made before the rotation is still accepted for at most 30 s after it was made, and never by a door that changes keys, recovery, credentials or residency). Recorded in the identity log.`,
  auth: "optional",
  whenRestricted: "open",
  hints: { destructive: true },
  input: z.strictObject({
    did: Hex64.describe("the citizen whose controller rotates"),
    nonce: lowerHex(32).describe("a fresh gate nonce (GET /gate)"),
    public_key: lowerHex(64).describe("the committed next key, Ed25519, hex"),
    signature: lowerHex(128).describe(`that key's Ed25519 signature over the UTF-8 of ${ROTATION_MESSAGE}`),
    next_key_hashes: NextKeyHashes,
  }),
  output: z.object({
    now_utc: NowUtc,
    protocol: z.literal(PROTOCOLS.keys),
    did: Hex64,
    from: z.string().describe("the old controller's thumbprint, or none"),
    to: z.string().describe("the new controller's thumbprint: the keyid of your signed requests from now"),
    next_key_hashes: z.array(Hex64).nullable(),
    identity_log_receipt: IdentityReceipt,
    note: z.string(),
  }),
  run: async (ctx, input) => {
    const rotated = await rotateToCommitted(
      ctx.db,
      { did: input.did, nonce: input.nonce, publicKey: input.public_key, signature: input.signature, nextKeyHashes: input.next_key_hashes },
      ctx.now,
    );
    return {
      now_utc: iso(ctx.now),
      protocol: PROTOCOLS.keys,
      did: input.did,
      from: rotated.from,
      to: rotated.to,
      next_key_hashes: rotated.committed,
      identity_log_receipt: rotated.receipt,
      note: "Rotated: the committed key is your controller now; the old key opens nothing. Your citizen secret is unchanged.",
    };
  },
});

export const setRecoveryDelayDoor = door({
  name: "set-recovery-delay",
  currentKeyOnly: true,
  method: "POST",
  path: "/api/keys/delay",
  summary: `CITY-KEYS/1: set your recovery delay, 0 or ${RECOVERY_DELAY_HOURS.min} to ${RECOVERY_DELAY_HOURS.max} hours, with your citizen secret or a signed request. With a delay, a recovery code opens a public recovery instead of resetting your secret at once.`,
  description:
    "Raising the delay applies at once; lowering a delay that stands weakens your protections, so it opens a public step instead (answered as pending, with a ticket shown once) that you complete after the delay standing now, and that the credential that asked it, or one above it, cancels meanwhile. 0 (the default) keeps CITY-RECOVER/1 as it is: a code gives a new secret at once. With a delay, a code or a committed next key opens a recovery, public at GET /api/recover/{did}, in the identity log and in your poll (recovery_open), that your current secret or key cancels before it opens and that anyone may hold. A gate session token is refused (403). Recorded in the identity log.",
  auth: "citizen",
  whenRestricted: "open",
  // Not idempotent: a second commitment while one stands is 403, a second lowering 409.
  hints: { idempotent: false },
  input: z.strictObject({
    hours: z.number().int().min(0).max(RECOVERY_DELAY_HOURS.max).describe(`0, or ${RECOVERY_DELAY_HOURS.min} to ${RECOVERY_DELAY_HOURS.max}`),
  }),
  output: z.object({
    now_utc: NowUtc,
    protocol: z.literal(PROTOCOLS.keys),
    did: Hex64,
    delay_hours: z.number().int().describe("the recovery delay standing now"),
    pending: z
      .object({
        step: z.literal("lower-delay"),
        delay_hours: z.number().int().describe("the delay asked, set when the step completes"),
        opened_at: Timestamp,
        opens_after: Timestamp,
        ticket: z.string().describe("shown once: completes the step after opens_after"),
      })
      .nullable()
      .describe("a lowering waits out the delay standing: the step opened for it; null when the delay applied at once"),
    identity_log_receipt: IdentityReceipt,
    note: z.string(),
  }),
  run: async (ctx, input) => {
    requireCitizenSecret(ctx.caller, "Setting the recovery delay");
    const set = await setRecoveryDelay(ctx.db, ctx.caller.did!, input.hours, authorityOf(ctx.caller.credential), ctx.now);
    const pending = set.pending;
    return {
      now_utc: iso(ctx.now),
      protocol: PROTOCOLS.keys,
      did: ctx.caller.did!,
      delay_hours: set.delayHours,
      pending: pending
        ? {
            step: "lower-delay" as const,
            delay_hours: pending.lowerTo,
            opened_at: iso(pending.openedAt),
            opens_after: iso(pending.opensAfter),
            ticket: pending.ticket,
          }
        : null,
      identity_log_receipt: set.receipt,
      note: pending
        ? `Lowering the delay weakens your protections, so it waits out the ${set.delayHours} hours standing, in public (GET /api/recover/${ctx.caller.did}): complete it after ${iso(pending.opensAfter)} with the ticket (shown once) at POST /api/recover/${ctx.caller.did}/complete. Until then the credential that asked it, or one above it, cancels it.`
        : input.hours
          ? `A recovery code now opens a public recovery that opens after ${input.hours} hours; your secret or key cancels it before then.`
          : "No delay: a recovery code gives a new secret at once (CITY-RECOVER/1).",
    };
  },
});

export const keyDoors = [commitNextKeysDoor, rotateKeyDoor, setRecoveryDelayDoor];
