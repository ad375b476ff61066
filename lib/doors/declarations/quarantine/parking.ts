import { z } from "zod";
import { type Parked, PARKED_WINDOW_SECONDS, parkedCap } from "@/lib/city/quarantine";
import { type DoorContext, type PublishedLimit, Reply } from "@/lib/doors/door";
import { iso, NowUtc } from "@/lib/doors/schemas";

export const ParkedOutput = z.object({
  now_utc: NowUtc,
  parked: z.literal(true),
  quarantine_id: z.number().int(),
  reason: z.string(),
  note: z.string(),
});

/** The published limits of a door that parks: its hourly window, and the cap on what it parks past it. */
export function parkingLimits(name: string, perHour: number, per: string): PublishedLimit[] {
  return [
    { name, limit: perHour, window_seconds: 3600, per, over: "parked" },
    { name: "parked_writes", limit: parkedCap(perHour), window_seconds: PARKED_WINDOW_SECONDS, per, over: "refused" },
  ];
}

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
