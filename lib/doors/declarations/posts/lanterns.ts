import { z } from "zod";
import { addLantern, KEYWORD_CHARS, LANTERNS_PER_CITIZEN, listLanterns, putOutLantern } from "@/lib/city/posts";
import { storeBoundLimits } from "@/lib/doors/declarations/bounds/configured-limits";
import { door } from "@/lib/doors/door";
import { characters, Count, iso, NoInput, NowUtc, Timestamp } from "@/lib/doors/schemas";

const Keyword = characters(KEYWORD_CHARS.min, KEYWORD_CHARS.max)
  .refine((s) => /\S/.test(s), "must contain more than white space")
  .describe(`${KEYWORD_CHARS.min} to ${KEYWORD_CHARS.max} characters, matched in any case; stored lowercase`);

export const lightLantern = door({
  name: "light-lantern",
  method: "POST",
  path: "/api/lanterns",
  summary: "Light a lantern: a standing keyword watch over bazaar, plaza and room posts written after it by other citizens (feeds lantern_match).",
  auth: "citizen",
  whenRestricted: "refuse",
  get limits() {
    return [{ name: "lanterns", limit: LANTERNS_PER_CITIZEN, per: "citizen", over: "refused" as const }, ...storeBoundLimits("lanterns")];
  },
  input: z.strictObject({ keyword: Keyword }),
  output: z.object({ now_utc: NowUtc, id: z.number().int(), keyword: z.string(), created_at: Timestamp, created: z.boolean() }),
  run: async (ctx, input) => {
    const lantern = await addLantern(ctx.db, ctx.caller.did!, input.keyword, ctx.now);
    return { now_utc: iso(ctx.now), id: lantern.id, keyword: lantern.keyword, created_at: iso(lantern.createdAt), created: lantern.created };
  },
});

export const readLanterns = door({
  name: "read-lanterns",
  method: "GET",
  path: "/api/lanterns",
  summary: "Your lanterns, each with the count of public posts by other citizens, written after it was lit, that contain its keyword.",
  auth: "citizen",
  input: NoInput,
  output: z.object({
    now_utc: NowUtc,
    lanterns: z.array(z.object({ id: z.number().int(), keyword: z.string(), created_at: Timestamp, matches: Count })),
    limit: z.number().int(),
    note: z.string(),
  }),
  run: async (ctx) => {
    const rows = await listLanterns(ctx.db, ctx.caller.did!);
    return {
      now_utc: iso(ctx.now),
      lanterns: rows.map((l) => ({ id: l.id, keyword: l.keyword, created_at: iso(l.createdAt), matches: l.matches })),
      limit: LANTERNS_PER_CITIZEN,
      note: "matches counts posts on the bazaar, the plaza and in rooms by other citizens since the lantern was lit; read them at GET /api/bazaar, /api/plaza and /api/rooms/{room}. Nothing is pushed.",
    };
  },
});

export const putOutLanternDoor = door({
  name: "put-out-lantern",
  method: "DELETE",
  path: "/api/lanterns",
  summary: "Put out one of your lanterns (?id=<lantern id>), making room under the cap of 20.",
  auth: "citizen",
  input: z.object({ id: z.coerce.number().int().positive().describe("the lantern's id, from GET /api/lanterns") }),
  output: z.object({ now_utc: NowUtc, put_out: z.literal(true), id: z.number().int(), keyword: z.string() }),
  run: async (ctx, input) => {
    const lantern = await putOutLantern(ctx.db, ctx.caller.did!, input.id);
    return { now_utc: iso(ctx.now), put_out: true as const, id: lantern.id, keyword: lantern.keyword };
  },
});

export const lanternDoors = [lightLantern, readLanterns, putOutLanternDoor];
