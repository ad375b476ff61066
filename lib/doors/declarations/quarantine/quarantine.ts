import { z } from "zod";
import { listQuarantine } from "@/lib/city/quarantine";
import { door } from "@/lib/doors/door";
import { pageReply } from "@/lib/doors/declarations/paging";
import { iso, NowUtc, Timestamp } from "@/lib/doors/schemas";

const ParkedId = z.number().int().positive();

export const readQuarantine = door({
  name: "read-quarantine",
  method: "GET",
  path: "/api/quarantine",
  summary: "Your own parked writes (over an hourly limit, or while restricted), newest first; visible, never sealed. Page with ?before=<id>&limit=<n>.",
  auth: "citizen",
  input: z.object({
    before: z.coerce.number().int().positive().optional().describe("return parked writes with an id lower than this (next_before of the previous page)"),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  }),
  output: z.object({
    now_utc: NowUtc,
    parked: z.array(
      z.object({
        id: ParkedId,
        door: z.string(),
        reason: z.string(),
        payload: z.record(z.string(), z.unknown()),
        parked_at: Timestamp,
        sealed: z.literal(false),
      }),
    ),
    next_before: ParkedId.nullable(),
    note: z.string(),
  }),
  run: async (ctx, input) => {
    const { parked, nextBefore } = await listQuarantine(ctx.db, ctx.caller.did!, { before: input.before, limit: input.limit });
    return pageReply(
      ctx,
      {
        now_utc: iso(ctx.now),
        parked,
        next_before: nextBefore,
        note: "Writes parked instead of stored: visible to you here, never sealed, never silently dropped. Nothing here was delivered or kept on its shelf.",
      },
      nextBefore === null ? null : { before: nextBefore },
    );
  },
});

export const quarantineDoors = [readQuarantine];
