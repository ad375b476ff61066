import { z } from "zod";
import {
  authorityOf,
  mintRecoveryCodes,
  openWithNextKey,
  RECOVERY_CODES_PER_MINT,
  type Recovered,
  recoverWithController,
  redeemCode,
  cancelRecovery,
  completeRecovery,
  RECOVERY_STEPS,
  RECOVERY_VIAS,
  HOLD_HOURS,
  HOLD_REASONS,
  HOLDS_PER_RECOVERY,
  OWNER_HOLDS_PER_DAY,
  holdRecovery,
  readPublicRecovery,
} from "@/lib/city/keys";
import { PROTOCOLS } from "@/lib/city/protocols";
import { env } from "@/lib/env";
import { CityError } from "@/lib/errors";
import { configuredLimit } from "@/lib/doors/declarations/bounds/configured-limits";
import { requireCitizenSecret } from "@/lib/doors/pipeline/caller";
import { door } from "@/lib/doors/door";
import { verifyWithKeyHistory } from "@/lib/doors/pipeline/signature";
import { IdentityReceipt } from "./keys";
import { Hex64, iso, lowerHex, NowUtc, StoredText, Timestamp } from "@/lib/doors/schemas";

export const recoverDoor = door({
  name: "recover",
  currentKeyOnly: true,
  method: "POST",
  path: "/api/recover",
  summary:
    "CITY-RECOVER/1: with your Bearer citizen secret (not a session token) and { mint: true }, eight single-use recovery codes; without it, { did, code }, or { did, nonce, controller_signature } with the controller's Ed25519 signature over the UTF-8 of `CITY-RECOVER/1|recover|<did>|<nonce>` (never the bare gate nonce), for a new secret.",
  description:
    "Mint codes before your secret can be lost: they are shown once, a new mint voids the old set, and only the citizen secret mints (a gate session token is 403). Redeeming a code, or a controller recovery, issues a new citizen secret: the old secret and every live gate session token stop working. Controller recovery: take a fresh nonce from GET /gate and sign, with the bound controller key (Ed25519, strict), the UTF-8 bytes of `CITY-RECOVER/1|recover|<did>|<nonce>` (did: 64 lowercase hex; nonce: its 32 hex characters). This is not the gate's message (the gate signs the bare nonce), so no gate signature is ever a recovery. The nonce is spent whether or not the signature verifies. Where the citizen set a recovery delay (CITY-KEYS/1, POST /api/keys/delay), a code, or a committed next key's signature over `CITY-KEYS/1|recover|<did>|<thumbprint>|<nonce>`, opens a public recovery instead (GET /api/recover/{did}): the answer carries its clock and a ticket shown once, for POST /api/recover/{did}/complete after opens_after. A controller recovery waits out the delay too (a new secret weakens whoever holds the old one; a committed next key cancels it by rotating); with no delay it gives a new secret at once and voids the unused codes minted under the old one.",
  auth: "optional",
  whenRestricted: "open",
  // A mint voids the previous codes; a redemption kills the old secret.
  hints: { destructive: true },
  input: z.strictObject({
    mint: z.literal(true).optional().describe("with a Bearer credential: mint eight recovery codes"),
    did: Hex64.optional().describe("the citizen to recover"),
    code: StoredText.max(200).optional().describe("one recovery code (city_rc_...)"),
    nonce: lowerHex(32).optional().describe("a fresh gate nonce, for controller recovery"),
    controller_signature: lowerHex(128)
      .optional()
      .describe("the bound controller key's Ed25519 signature over the UTF-8 of CITY-RECOVER/1|recover|<did>|<nonce>"),
    next_public_key: lowerHex(64).optional().describe("a committed next key (CITY-KEYS/1), to open a recovery where a delay is set"),
    next_signature: lowerHex(128).optional().describe("that key's Ed25519 signature over the UTF-8 of CITY-KEYS/1|recover|<did>|<its thumbprint>|<nonce>"),
  }),
  output: z.object({
    now_utc: NowUtc,
    protocol: z.literal(PROTOCOLS.recover),
    did: Hex64,
    codes: z.array(z.string()).optional().describe("shown once"),
    citizen_secret: z.string().optional().describe("shown once"),
    recovery: z
      .object({
        state: z.literal("open"),
        opened_at: Timestamp,
        opens_after: Timestamp,
        ticket: z.string().describe("shown once: completes the recovery after opens_after"),
      })
      .optional()
      .describe("where the citizen set a recovery delay (CITY-KEYS/1): the recovery this proof opened instead of a new secret"),
    identity_log_receipt: IdentityReceipt.optional(),
    note: z.string(),
  }),
  run: async (ctx, input) => {
    const base = { now_utc: iso(ctx.now), protocol: PROTOCOLS.recover };
    if (input.mint) {
      if (!ctx.caller.did) {
        throw new CityError(
          "unauthorized",
          ctx.caller.credentialRejected
            ? "The Bearer token sent opens nothing (revoked, expired or unknown); minting recovery codes needs your live citizen secret."
            : "Minting recovery codes needs your Bearer citizen secret.",
        );
      }
      requireCitizenSecret(ctx.caller, "Minting recovery codes");
      const codes = await mintRecoveryCodes(ctx.db, ctx.caller.did, ctx.now);
      return {
        ...base,
        did: ctx.caller.did,
        codes,
        note: `Shown once: ${RECOVERY_CODES_PER_MINT} single-use codes; any earlier unused codes are now void. Keep them apart from your secret.`,
      };
    }
    if (!input.did)
      throw new CityError(
        "bad_request",
        "Send { mint: true } with your Bearer credential, or { did, code }, or { did, nonce, controller_signature }, or { did, nonce, next_public_key, next_signature }.",
      );
    let recovered: Recovered;
    if (input.code !== undefined) recovered = await redeemCode(ctx.db, input.did, input.code, ctx.now);
    else if (input.nonce && input.controller_signature)
      recovered = await recoverWithController(ctx.db, input.did, input.nonce, input.controller_signature, ctx.now);
    else if (input.nonce && input.next_public_key && input.next_signature)
      recovered = await openWithNextKey(ctx.db, input.did, input.nonce, input.next_public_key, input.next_signature, ctx.now);
    else
      throw new CityError(
        "bad_request",
        "To recover send { did, code }, { did, nonce, controller_signature } or { did, nonce, next_public_key, next_signature }.",
      );
    if ("opened" in recovered) {
      const { opened } = recovered;
      return {
        ...base,
        did: input.did,
        recovery: { state: "open" as const, opened_at: iso(opened.openedAt), opens_after: iso(opened.opensAfter), ticket: opened.ticket },
        identity_log_receipt: opened.receipt,
        note: `This citizen set a recovery delay: a recovery is open, in public (GET /api/recover/${input.did}), until ${iso(opened.opensAfter)}. Its current secret or key may cancel it before then, and anyone may hold it. After it, complete it with the ticket (shown once) at POST /api/recover/${input.did}/complete.`,
      };
    }
    return {
      ...base,
      did: input.did,
      citizen_secret: recovered.secret,
      identity_log_receipt: recovered.receipt,
      note: "A new citizen secret, shown once. The old secret and every gate session token no longer work; the code is spent.",
    };
  },
});

const DidParam = Hex64.describe("the citizen's DID");

const PublicRecoverySchema = z.object({
  now_utc: NowUtc,
  protocol: z.literal(PROTOCOLS.keys),
  did: Hex64,
  delay_hours: z.number().int().describe("0: a recovery code gives a new secret at once; else the public window, in hours"),
  pre_rotation: z.boolean().describe("a commitment of next keys stands"),
  recovery: z
    .object({
      state: z.enum(["open", "cancelled", "completed"]),
      step: z.enum(RECOVERY_STEPS).describe("recovery: a new secret once it completes; lower-delay: the recovery delay lowered once it completes"),
      via: z.enum(RECOVERY_VIAS).describe("the credential that asked it; only it or one above it cancels it (code < secret < controller < next-key)"),
      lower_to: z.number().int().nullable().describe("a lower-delay step's new delay in hours; null for a recovery"),
      opened_at: Timestamp,
      opens_after: Timestamp.describe("before it: the current secret or key may cancel; after it: the opener may complete"),
      holds: z.number().int(),
      holds_left: z.number().int(),
      closed_at: Timestamp.nullable(),
    })
    .nullable()
    .describe("the citizen's latest recovery; null: none was ever opened"),
  note: z.string(),
});

export const readRecoveryDoor = door({
  name: "read-recovery",
  method: "GET",
  path: "/api/recover/{did}",
  summary:
    "CITY-KEYS/1: a citizen's recovery in public: its delay, whether pre-rotation stands, and its latest recovery (state, opened_at, opens_after, holds).",
  description: `Anyone may watch: a recovery opened by a stolen code shows here (and in the identity log) for the whole window. Until opens_after the citizen's current secret or key cancels it (POST /api/recover/{did}/cancel); anyone may hold it (POST /api/recover/{did}/hold), ${HOLDS_PER_RECOVERY} holds at most, each ${HOLD_HOURS} h. An unknown or exported DID is 404.`,
  auth: "none",
  cache: "live",
  input: z.object({ did: DidParam }),
  output: PublicRecoverySchema,
  run: async (ctx, input) => {
    const found = await readPublicRecovery(ctx.db, input.did);
    if (!found) throw new CityError("not_found", "No citizen has that DID here, or it exported and left.");
    return { now_utc: iso(ctx.now), protocol: PROTOCOLS.keys, ...found, note: recoveryNote(found.recovery?.state ?? null) };
  },
});

function recoveryNote(state: "open" | "cancelled" | "completed" | null): string {
  if (state === "open")
    return "A recovery is open: if its citizen did not ask for it, hold it (a reason code) and tell its owner; its current secret or key cancels it.";
  return "No recovery is open.";
}

export const holdRecoveryDoor = door({
  name: "hold-recovery",
  method: "POST",
  path: "/api/recover/{did}/hold",
  summary: `CITY-KEYS/1: anyone, without credentials, holds an open recovery with a reason code (${HOLD_REASONS.join(", ")}): opens_after moves to ${HOLD_HOURS} h past the later of itself and now; ${HOLDS_PER_RECOVERY} holds per recovery at most.`,
  description: `A hold gives the citizen's owner time to notice and cancel. It carries no free text, only a reason from the fixed list. Anonymous holds are bounded per day for each address the city can tell apart and per hour for each source (the citizen whose credential came with the hold, else the address's IPv4 /24 or IPv6 /48), 429 past either, and ${HOLDS_PER_RECOVERY} per recovery (409 limit_reached); there is no city-wide pool of holds. A hold sent with a credential of the recovery's own citizen, or signed (CITY-SIG/1) with any key ever bound to its DID, its controller now or one rotated away however long ago (the identity log's key-bound and key-rotated rows), counts against none of these, only against that citizen's ${OWNER_HOLDS_PER_DAY} a day. No open recovery: 404. Recorded in the identity log.`,
  auth: "optional",
  // A thief who rotated the owner's key away does not make the owner's old key a stranger's here.
  keyHistorySignatures: true,
  whenRestricted: "open",
  get limits() {
    return [
      { name: "holds per recovery", limit: HOLDS_PER_RECOVERY, per: "recovery", over: "refused" as const },
      ...configuredLimit({
        name: "recovery holds",
        variable: "CITY_RECOVER_HOLDS_PER_ADDRESS_PER_DAY",
        windowSeconds: 86_400,
        per: "client address",
        over: "refused",
        zeroIsOff: true,
        perAddress: true,
      }),
      ...configuredLimit({
        name: "recovery holds per source",
        variable: "CITY_RECOVER_HOLDS_PER_SOURCE_PER_HOUR",
        windowSeconds: 3600,
        per: "source: the citizen whose credential came with the hold, else the client address's IPv4 /24 or IPv6 /48",
        over: "refused",
        zeroIsOff: true,
      }),
      { name: "holds by the recovery's own citizen", limit: OWNER_HOLDS_PER_DAY, window_seconds: 86_400, per: "citizen", over: "refused" as const },
    ];
  },
  input: z.strictObject({ did: DidParam, reason: z.enum(HOLD_REASONS).describe("why the recovery should wait, from the fixed list") }),
  output: z.object({
    now_utc: NowUtc,
    protocol: z.literal(PROTOCOLS.keys),
    did: Hex64,
    holds: z.number().int(),
    opens_after: Timestamp,
    identity_log_receipt: IdentityReceipt,
    note: z.string(),
  }),
  run: async (ctx, input) => {
    const { CITY_RECOVER_HOLDS_PER_ADDRESS_PER_DAY, CITY_RECOVER_HOLDS_PER_SOURCE_PER_HOUR } = env();
    // Signed with a key no live citizen signs with now: it must be one of this citizen's key history (else 401 unknown_key).
    const signedWith = ctx.caller.signedWithUnknownKey ? (await verifyWithKeyHistory(ctx.db, ctx.request, input.did, ctx.now)).keyid : null;
    const held = await holdRecovery(
      ctx.db,
      {
        did: input.did,
        reason: input.reason,
        ip: ctx.request.ip,
        caller: ctx.caller.kind === "citizen" && ctx.caller.did ? { did: ctx.caller.did } : null,
        signedWith,
        limits: { perAddressPerDay: CITY_RECOVER_HOLDS_PER_ADDRESS_PER_DAY, perSourcePerHour: CITY_RECOVER_HOLDS_PER_SOURCE_PER_HOUR },
      },
      ctx.now,
    );
    return {
      now_utc: iso(ctx.now),
      protocol: PROTOCOLS.keys,
      did: input.did,
      holds: held.holds,
      opens_after: iso(held.opensAfter),
      identity_log_receipt: held.receipt,
      note: held.owner
        ? `Held by its own citizen: the recovery cannot complete before ${iso(held.opensAfter)}. Your current secret or key cancels it.`
        : `Held: the recovery cannot complete before ${iso(held.opensAfter)}. ${HOLDS_PER_RECOVERY - held.holds} anonymous hold(s) left.`,
    };
  },
});

export const cancelRecoveryDoor = door({
  name: "cancel-recovery",
  currentKeyOnly: true,
  method: "POST",
  path: "/api/recover/{did}/cancel",
  summary:
    "CITY-KEYS/1: cancel your open step (a recovery, or a lowering of your recovery delay) before opens_after, with your current citizen secret or a request signed with your controller key, when that credential asked it or outranks the one that did.",
  description:
    "Only the citizen itself cancels (another citizen is 403), and not with a gate session token. Who outranks whom: a committed next key outranks the controller key, which outranks the secret, which outranks a recovery code; a step asked with a higher credential than yours is 403 (a committed next key cancels every step by rotating, POST /api/keys/rotate). After opens_after only the opener may complete it (409). Recorded in the identity log. If you did not open it, a recovery code of yours was taken: mint new codes (POST /api/recover { mint: true }), which voids the old ones.",
  auth: "citizen",
  whenRestricted: "open",
  input: z.strictObject({ did: DidParam }),
  output: z.object({
    now_utc: NowUtc,
    protocol: z.literal(PROTOCOLS.keys),
    did: Hex64,
    state: z.literal("cancelled"),
    identity_log_receipt: IdentityReceipt,
    note: z.string(),
  }),
  run: async (ctx, input) => {
    requireCitizenSecret(ctx.caller, "Cancelling a recovery");
    if (ctx.caller.did !== input.did) throw new CityError("forbidden", "Only the citizen itself cancels its recovery.");
    const receipt = await cancelRecovery(ctx.db, input.did, authorityOf(ctx.caller.credential), ctx.now);
    return {
      now_utc: iso(ctx.now),
      protocol: PROTOCOLS.keys,
      did: input.did,
      state: "cancelled" as const,
      identity_log_receipt: receipt,
      note: "Cancelled: nothing of yours changed. If you did not open it, mint new recovery codes now (the old ones are void then).",
    };
  },
});

export const completeRecoveryDoor = door({
  name: "complete-recovery",
  method: "POST",
  path: "/api/recover/{did}/complete",
  summary:
    "CITY-KEYS/1: the opener completes its step after opens_after with the ticket it was shown once: a recovery gives a new citizen secret (shown once), every older credential dead; a lowering of the recovery delay sets the delay it asked.",
  description:
    "A recovery: the secret, every gate session token and every unused recovery code stop working; a committed next key that opened it becomes the controller if it is still committed (a key withdrawn meanwhile by a rotation cancels the recovery: 409), the rest of the commitment standing; a code's completion unbinds the old controller, which may be the thief's; a controller recovery keeps the controller. A lower-delay step: the delay becomes the one asked. Before opens_after, or once cancelled: 409. A wrong ticket: 401. Recorded in the identity log.",
  auth: "optional",
  whenRestricted: "open",
  hints: { destructive: true },
  input: z.strictObject({ did: DidParam, ticket: StoredText.max(200).describe("the ticket shown once when the recovery opened (city_rt_...)") }),
  output: z.object({
    now_utc: NowUtc,
    protocol: z.literal(PROTOCOLS.keys),
    did: Hex64,
    step: z.enum(RECOVERY_STEPS).describe("what completed: a recovery, or a lowering of the recovery delay"),
    citizen_secret: z.string().optional().describe("a recovery's new secret, shown once"),
    controller: z.string().optional().describe("after a recovery: the controller key's thumbprint now, or none"),
    delay_hours: z.number().int().optional().describe("after a lower-delay step: the recovery delay now"),
    identity_log_receipt: IdentityReceipt,
    note: z.string(),
  }),
  run: async (ctx, input) => {
    const done = await completeRecovery(ctx.db, input.did, input.ticket, ctx.now);
    const base = { now_utc: iso(ctx.now), protocol: PROTOCOLS.keys, did: input.did, step: done.step, identity_log_receipt: done.receipt };
    if (done.step === "lower-delay") return { ...base, delay_hours: done.delayHours, note: `The recovery delay is now ${done.delayHours} hours.` };
    return {
      ...base,
      citizen_secret: done.secret,
      controller: done.controller,
      note: "Recovered: a new citizen secret, shown once. Every older secret, session token and recovery code is dead; mint new recovery codes now.",
    };
  },
});

export const recoverDoors = [recoverDoor, readRecoveryDoor, holdRecoveryDoor, cancelRecoveryDoor, completeRecoveryDoor];
