import { z } from "zod";
import type { Parked } from "@/lib/city/quarantine";
import { type DoorContext, Reply } from "./door";
import { iso, NowUtc } from "./schemas";

export const ParkedOutput = z.object({
  now_utc: NowUtc,
  parked: z.literal(true),
  quarantine_id: z.number().int(),
  reason: z.string(),
  note: z.string(),
});

/** A door's answer schema when it can park: its own answer, or 202 parked. */
export function orParked<T extends z.ZodType>(schema: T) {
  return z.union([schema, ParkedOutput]);
}

export function parkedReply(ctx: DoorContext, parked: Parked) {
  return new Reply(
    {
      now_utc: iso(ctx.now),
      ...parked,
      note: "Parked in quarantine, not stored: visible to you at GET /api/quarantine, never sealed, never silently dropped.",
    },
    { status: 202 },
  );
}
