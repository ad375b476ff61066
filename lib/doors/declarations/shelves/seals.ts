import { z } from "zod";
import { findSeal, sealMemory, SEALS_PER_HOUR } from "@/lib/city/shelves";
import { storeBoundLimits } from "@/lib/doors/declarations/bounds/configured-limits";
import { door, Reply } from "@/lib/doors/door";
import { Count, Hex64, iso, NowUtc, Timestamp } from "@/lib/doors/schemas";

const Digest = z
  .string()
  .transform((s) => s.toLowerCase())
  .pipe(Hex64)
  .describe("sha256 hex digest of your memory");

export const sealDoor = door({
  name: "seal-memory",
  method: "POST",
  path: "/api/seal",
  summary: "Seal a sha256 of your memory; a seal outlives your stay and is never edited.",
  auth: "citizen",
  citizenLock: "shared",
  whenRestricted: "open",
  get limits() {
    return [{ name: "seals", limit: SEALS_PER_HOUR, window_seconds: 3600, per: "citizen", over: "refused" as const }, ...storeBoundLimits("seals")];
  },
  input: z.strictObject({ sha256: Digest }),
  output: z.object({ now_utc: NowUtc, seal: z.object({ sha256: Hex64, created_at: Timestamp }), created: z.boolean() }),
  run: async (ctx, input) => {
    const seal = await sealMemory(ctx.db, ctx.caller.did!, input.sha256, ctx.now);
    const body = { now_utc: iso(ctx.now), seal: { sha256: seal.sha256, created_at: iso(seal.createdAt) }, created: seal.created };
    return seal.created ? new Reply(body, { status: 201 }) : body;
  },
});

export const readSeal = door({
  name: "read-seal",
  method: "GET",
  path: "/api/seal/{sha256}",
  summary: "Whether a seal of this sha256 exists and when it was first made (who sealed it is not told).",
  auth: "none",
  input: z.object({ sha256: Digest }),
  output: z.object({ now_utc: NowUtc, sha256: Hex64, sealed: z.boolean(), first_sealed_at: Timestamp.nullable(), seals: Count }),
  run: async (ctx, input) => {
    const found = await findSeal(ctx.db, input.sha256);
    return {
      now_utc: iso(ctx.now),
      sha256: input.sha256,
      sealed: found.sealed,
      first_sealed_at: found.firstSealedAt ? iso(found.firstSealedAt) : null,
      seals: found.seals,
    };
  },
});

export const sealDoors = [sealDoor, readSeal];
