import { z } from "zod";
import { BAG_NAME, keepBag, listBags, LOCKER_WRITES_PER_HOUR, readBag } from "@/lib/city/shelves";
import { LIMITS } from "@/lib/city/protocols";
import { env } from "@/lib/env";
import { door, type PublishedLimit } from "@/lib/doors/door";
import { Count, iso, NoInput, NowUtc, StoredText, Timestamp } from "@/lib/doors/schemas";

const L = LIMITS.locker;

export const BagName = z.string().regex(BAG_NAME, "must be 1 to 64 of A-Z a-z 0-9 . _ - (not . or ..)");

/** The locker's limits, published on the door and answered with the list; the city-wide bound is the deployment's. */
export function lockerLimits(): PublishedLimit[] {
  return [
    { name: "bags", limit: L.bagsPerCitizen, per: "citizen", over: "refused" },
    { name: "bag_bytes", limit: L.bytesPerBag, per: "bag", over: "refused" },
    { name: "citizen_bytes", limit: L.bytesPerCitizen, per: "citizen", over: "refused" },
    { name: "city_bytes", limit: env().CITY_LOCKER_CITY_BYTES, per: "city", over: "refused" },
    { name: "locker_writes", limit: LOCKER_WRITES_PER_HOUR, window_seconds: 3600, per: "citizen", over: "refused" },
  ];
}

export const PublishedLimitSchema = z.object({
  name: z.string(),
  limit: z.number().int(),
  window_seconds: z.number().int().optional(),
  per: z.string(),
  over: z.enum(["refused", "parked", "filtered", "oldest removed", "counted coarser"]),
});

const BagMetaSchema = z.object({ bag: z.string(), bytes: Count, updated_at: Timestamp });

export const keepLockerBag = door({
  name: "keep-locker",
  method: "POST",
  path: "/api/locker",
  summary: "Keep a bag { bag, content } in your private locker; writing an existing bag overwrites it. Keys, seeds and tokens are refused.",
  description:
    "Bytes are the UTF-8 bytes of content. An overwrite counts the new size in place of the old. When the city-wide bound is reached the answer is 507 city_full and nobody is evicted.",
  auth: "citizen",
  whenRestricted: "refuse",
  // A getter: the city-wide bound is read from the environment when published, not at import.
  get limits() {
    return lockerLimits();
  },
  input: z.strictObject({ bag: BagName, content: StoredText }),
  output: z.object({ now_utc: NowUtc, bag: z.string(), bytes: Count, updated_at: Timestamp }),
  // JSON may escape every byte of a full bag as \u00XX (6 bytes); anything larger is refused unread.
  maxBodyBytes: 6 * L.bytesPerBag + 1024,
  run: async (ctx, input) => {
    const kept = await keepBag(ctx.db, { did: ctx.caller.did!, bag: input.bag, content: input.content, now: ctx.now, cityBytes: env().CITY_LOCKER_CITY_BYTES });
    return { now_utc: iso(ctx.now), bag: kept.bag, bytes: kept.bytes, updated_at: iso(kept.updatedAt) };
  },
});

export const readLocker = door({
  name: "read-locker",
  method: "GET",
  path: "/api/locker",
  summary: "Your locker: every bag's name, bytes and updated_at (never contents), the bytes you use, and the locker's limits.",
  auth: "citizen",
  input: NoInput,
  output: z.object({ now_utc: NowUtc, bags: z.array(BagMetaSchema), used_bytes: Count, limits: z.array(PublishedLimitSchema) }),
  run: async (ctx) => {
    const { bags, usedBytes } = await listBags(ctx.db, ctx.caller.did!);
    return {
      now_utc: iso(ctx.now),
      bags: bags.map((b) => ({ bag: b.bag, bytes: b.bytes, updated_at: iso(b.updatedAt) })),
      used_bytes: usedBytes,
      limits: lockerLimits(),
    };
  },
});

export const readLockerBag = door({
  name: "read-locker-bag",
  method: "GET",
  path: "/api/locker/{bag}",
  summary: "One bag of your locker with its content.",
  auth: "citizen",
  input: z.object({ bag: BagName.describe("the bag's name") }),
  output: z.object({ now_utc: NowUtc, bag: z.string(), content: z.string(), bytes: Count, updated_at: Timestamp }),
  run: async (ctx, input) => {
    const bag = await readBag(ctx.db, ctx.caller.did!, input.bag);
    return { now_utc: iso(ctx.now), bag: bag.bag, content: bag.content, bytes: bag.bytes, updated_at: iso(bag.updatedAt) };
  },
});

export const lockerDoors = [keepLockerBag, readLocker, readLockerBag];
