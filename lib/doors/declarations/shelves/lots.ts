import { z } from "zod";
import { actOnLot, LOT_ACTIONS, LOT_COUNT, LOT_DOOR, listLots } from "@/lib/city/shelves";
import { LIMITS } from "@/lib/city/protocols";
import { door } from "@/lib/doors/door";
import { Count, Hex64, iso, NoInput, NowUtc, StoredText, Timestamp } from "@/lib/doors/schemas";

const LAND_NOTE = "Land is never sold: a lot is only locked and released. A held lot is not occupied.";

export const lockLot = door({
  name: LOT_DOOR,
  method: "POST",
  path: "/api/lot",
  summary: "Lock (hold) or release a lot of the plat, lot-01 to lot-64; one holder per lot. Land is never sold and a held lot is not occupied.",
  auth: "citizen",
  whenRestricted: "refuse",
  // Releasing one's own lot is always possible: restricted or not, whatever the window says.
  openWhileRestricted: (input) => input.action === "release",
  limits: [{ name: "lot-locks", limit: LIMITS.perHour.lotLocks, window_seconds: 3600, per: "citizen; releases are not counted", over: "refused" }],
  input: z.strictObject({
    lot: StoredText.min(1).max(64).describe(`a lot of the plat: lot-01 to lot-${LOT_COUNT}`),
    action: z.enum(LOT_ACTIONS, { error: "action is lock or release; land is never sold" }),
  }),
  output: z.object({
    now_utc: NowUtc,
    lot: z.string(),
    action: z.enum(LOT_ACTIONS),
    held: z.boolean(),
    holder: Hex64.nullable(),
    held_since: Timestamp.nullable(),
    occupied: z.literal(false),
    note: z.string(),
  }),
  run: async (ctx, input) => {
    const state = await actOnLot(ctx.db, { did: ctx.caller.did!, lot: input.lot, action: input.action, now: ctx.now });
    return {
      now_utc: iso(ctx.now),
      lot: state.lot,
      action: input.action,
      held: state.held,
      holder: state.holder,
      held_since: state.heldSince ? iso(state.heldSince) : null,
      occupied: false as const,
      note: LAND_NOTE,
    };
  },
});

export const readLots = door({
  name: "read-lots",
  method: "GET",
  path: "/api/lot",
  summary: "The plat's 64 lots and which are held, by whom and since when. Held is not occupied; land is never sold.",
  auth: "none",
  input: NoInput,
  output: z.object({
    now_utc: NowUtc,
    lots: z.array(z.object({ lot: z.string(), held: z.boolean(), holder: Hex64.nullable(), held_since: Timestamp.nullable() })),
    held: Count,
    occupied: z.literal(0),
    note: z.string(),
  }),
  run: async (ctx) => {
    const lots = await listLots(ctx.db);
    return {
      now_utc: iso(ctx.now),
      lots: lots.map((l) => ({ lot: l.lot, held: l.held, holder: l.holder, held_since: l.heldSince ? iso(l.heldSince) : null })),
      held: lots.filter((l) => l.held).length,
      occupied: 0 as const,
      note: `${LAND_NOTE} A holder is a public DID, like the directory's fingerprints.`,
    };
  },
});

export const lotDoors = [lockLot, readLots];
