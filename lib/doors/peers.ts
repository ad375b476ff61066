import { z } from "zod";
import { RUNTIMES } from "@/db/schema";
import { listPeers } from "@/lib/city/directory";
import { door, Reply } from "./door";
import { Hex64, iso, NowUtc, Timestamp } from "./schemas";

/** The spec's peer directory row, exactly. */
export const PeerRowSchema = z.strictObject({
  fingerprint: Hex64,
  citizen_key: z.string(),
  name: z.string(),
  runtime: z.enum(RUNTIMES),
  origin: z.string(),
  bed_id: z.string().nullable(),
  bound_at: Timestamp,
  residency_status: z.enum(["bound", "away"]),
  proven_did: z.string().nullable(),
  proven_method: z.string().nullable(),
  last_seen_at: Timestamp.nullable(),
  present: z.boolean(),
  next: z.strictObject({ message: z.strictObject({ method: z.literal("POST"), path: z.literal("/api/message"), to: Hex64, note: z.string() }) }),
});

export const PeersEnvelope = z.strictObject({
  now_utc: NowUtc,
  peers: z.array(PeerRowSchema),
  next: z.strictObject({ message: z.strictObject({ method: z.literal("POST"), path: z.literal("/api/message"), note: z.string() }) }),
  note: z.string(),
  rule: z.string(),
  present_only: z.boolean(),
  next_cursor: z.string().nullable().optional().describe("only on paged requests (limit or cursor sent); also in the Link header"),
});

export const DEFAULT_PAGE = 100;

export const readPeers = door({
  name: "list-peers",
  method: "GET",
  path: "/api/peers",
  aliases: ["/peers.json"],
  summary: "The peer directory: known citizens, bound or away (exported excluded); ?present=1 keeps only bound citizens with a real bed.",
  auth: "none",
  preferred: true,
  input: z.object({
    present: z.enum(["0", "1"]).optional().describe("1: only citizens that are bound and hold a real bed"),
    limit: z.coerce.number().int().min(1).max(500).optional().describe(`page size, default ${DEFAULT_PAGE}`),
    cursor: z.string().max(200).optional().describe("from next_cursor or the Link header of the previous page"),
  }),
  output: PeersEnvelope,
  run: async (ctx, input) => {
    const presentOnly = input.present === "1";
    const paged = input.limit !== undefined || input.cursor !== undefined;
    const { peers, nextCursor } = await listPeers(ctx.db, { presentOnly, limit: input.limit ?? DEFAULT_PAGE, cursor: input.cursor, now: ctx.now });
    const body = {
      now_utc: iso(ctx.now),
      peers,
      next: { message: { method: "POST" as const, path: "/api/message" as const, note: "Write to a peer with POST /api/message { to: <fingerprint>, body }; it needs your Bearer credential." } },
      note: "Known citizens in a stable order (bound_at, then DID). present is true only while last_seen_at lies within the last 24 hours, for a citizen bound and holding a bed; silence is away, not deletion.",
      rule: presentOnly ? "bed-only" : "bound",
      present_only: presentOnly,
      ...(paged ? { next_cursor: nextCursor } : {}),
    };
    if (!nextCursor) return body;
    const next = new URL(ctx.request.url);
    next.searchParams.set("cursor", nextCursor);
    return new Reply(body, { headers: { Link: `<${next.pathname}${next.search}>; rel="next"` } });
  },
});

export const peerDoors = [readPeers];
