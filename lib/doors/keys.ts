import { z } from "zod";
import { NEXT_KEYS_MAX, commitNextKeys, rotateToCommitted } from "@/lib/city/pre-rotation";
import { PROTOCOLS } from "@/lib/city/protocols";
import { RECOVERY_DELAY_HOURS, setRecoveryDelay } from "@/lib/city/public-recovery";
import { LogReceiptSchema } from "@/lib/city/residency-log";
import { requireCitizenSecret } from "./caller";
import { door } from "./door";
import { Hex64, iso, lowerHex, NowUtc } from "./schemas";

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
  method: "POST",
  path: "/api/keys/commit",
  summary:
    "CITY-KEYS/1 pre-rotation: with your citizen secret or a request signed with your controller key, commit the SHA-256 of 1 to 3 next keys; from then on your controller moves only to a committed key.",
  description:
    "Each hash is the lowercase hex SHA-256 of a next key's 32 raw Ed25519 bytes. Once committed, every path that moves the controller (the gate's next_controller_* rotation, POST /api/keys/rotate, a recovery) accepts only a committed key, whoever asks. An empty list withdraws the commitment. A gate session token is refused (403). The commitment is recorded in the identity log.",
  auth: "citizen",
  whenRestricted: "open",
  hints: { idempotent: true },
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
    const { committed, receipt } = await commitNextKeys(ctx.db, ctx.caller.did!, input.next_key_hashes, ctx.now);
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
  description: `Take a fresh nonce from GET /gate. The thumbprints are RFC 7638 (SHA-256, base64url) of the Ed25519 JWKs; the old one is \`none\` when no controller is bound. The key's SHA-256 must be in the commitment standing (POST /api/keys/commit): an uncommitted key is refused (403) whatever credentials come with it. The rotation commits next_key_hashes for the next move (an empty list turns pre-rotation off). The nonce is spent whether or not the rotation succeeds. Signed requests follow the controller: the old key's signatures stop at once (those already made stay valid at most 305 s). Recorded in the identity log.`,
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
  method: "POST",
  path: "/api/keys/delay",
  summary: `CITY-KEYS/1: set your recovery delay, 0 or ${RECOVERY_DELAY_HOURS.min} to ${RECOVERY_DELAY_HOURS.max} hours, with your citizen secret or a signed request. With a delay, a recovery code opens a public recovery instead of resetting your secret at once.`,
  description:
    "0 (the default) keeps CITY-RECOVER/1 as it is: a code gives a new secret at once. With a delay, a code or a committed next key opens a recovery, public at GET /api/recover/{did}, in the identity log and in your poll (recovery_open), that your current secret or key cancels before it opens and that anyone may hold. A gate session token is refused (403). Recorded in the identity log.",
  auth: "citizen",
  whenRestricted: "open",
  hints: { idempotent: true },
  input: z.strictObject({
    hours: z.number().int().min(0).max(RECOVERY_DELAY_HOURS.max).describe(`0, or ${RECOVERY_DELAY_HOURS.min} to ${RECOVERY_DELAY_HOURS.max}`),
  }),
  output: z.object({
    now_utc: NowUtc,
    protocol: z.literal(PROTOCOLS.keys),
    did: Hex64,
    delay_hours: z.number().int(),
    identity_log_receipt: IdentityReceipt,
    note: z.string(),
  }),
  run: async (ctx, input) => {
    requireCitizenSecret(ctx.caller, "Setting the recovery delay");
    const receipt = await setRecoveryDelay(ctx.db, ctx.caller.did!, input.hours, ctx.now);
    return {
      now_utc: iso(ctx.now),
      protocol: PROTOCOLS.keys,
      did: ctx.caller.did!,
      delay_hours: input.hours,
      identity_log_receipt: receipt,
      note: input.hours
        ? `A recovery code now opens a public recovery that opens after ${input.hours} hours; your secret or key cancels it before then.`
        : "No delay: a recovery code gives a new secret at once (CITY-RECOVER/1).",
    };
  },
});

export const keyDoors = [commitNextKeysDoor, rotateKeyDoor, setRecoveryDelayDoor];
