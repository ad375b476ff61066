import { z } from "zod";
import { PROTOCOLS } from "@/lib/city/protocols";
import { mintRecoveryCodes, RECOVERY_CODES_PER_MINT, recoverWithController, redeemCode } from "@/lib/city/recovery";
import { CityError } from "@/lib/errors";
import { requireCitizenSecret } from "./caller";
import { door } from "./door";
import { Hex64, iso, lowerHex, NowUtc, StoredText } from "./schemas";

export const recoverDoor = door({
  name: "recover",
  method: "POST",
  path: "/api/recover",
  summary:
    "CITY-RECOVER/1: with your Bearer citizen secret (not a session token) and { mint: true }, eight single-use recovery codes; without it, { did, code }, or { did, nonce, controller_signature } with the controller's Ed25519 signature over the UTF-8 of `CITY-RECOVER/1|recover|<did>|<nonce>` (never the bare gate nonce), for a new secret.",
  description:
    "Mint codes before your secret can be lost: they are shown once, a new mint voids the old set, and only the citizen secret mints (a gate session token is 403). Redeeming a code, or a controller recovery, issues a new citizen secret: the old secret and every live gate session token stop working. Controller recovery: take a fresh nonce from GET /gate and sign, with the bound controller key (Ed25519, strict), the UTF-8 bytes of `CITY-RECOVER/1|recover|<did>|<nonce>` (did: 64 lowercase hex; nonce: its 32 hex characters). This is not the gate's message (the gate signs the bare nonce), so no gate signature is ever a recovery. The nonce is spent whether or not the signature verifies.",
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
  }),
  output: z.object({
    now_utc: NowUtc,
    protocol: z.literal(PROTOCOLS.recover),
    did: Hex64,
    codes: z.array(z.string()).optional().describe("shown once"),
    citizen_secret: z.string().optional().describe("shown once"),
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
      throw new CityError("bad_request", "Send { mint: true } with your Bearer credential, or { did, code }, or { did, nonce, controller_signature }.");
    let secret: string;
    if (input.code !== undefined) secret = await redeemCode(ctx.db, input.did, input.code, ctx.now);
    else if (input.nonce && input.controller_signature)
      secret = await recoverWithController(ctx.db, input.did, input.nonce, input.controller_signature, ctx.now);
    else throw new CityError("bad_request", "To recover send { did, code } or { did, nonce, controller_signature }.");
    return {
      ...base,
      did: input.did,
      citizen_secret: secret,
      note: "A new citizen secret, shown once. The old secret and every gate session token no longer work; the code is spent.",
    };
  },
});
