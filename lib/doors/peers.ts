import { z } from "zod";
import { RUNTIMES } from "@/db/schema";
import { listPeers, presenceChangesAt } from "@/lib/city/directory";
import { pageReply } from "./paging";
import { door } from "./door";
import { Hex64, iso, NowUtc, StoredText, Timestamp } from "./schemas";

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
  next: z.strictObject({
    message: z.strictObject({ method: z.literal("POST"), path: z.literal("/api/message"), note: z.string() }),
    cursor: z.string().nullable().describe("the next page's cursor (?cursor=), on every page; null on the last page; also in the Link header"),
  }),
  note: z.string(),
  rule: z.string(),
  present_only: z.boolean(),
});

export const DEFAULT_PAGE = 100;

export const readPeers = door({
  name: "list-peers",
  method: "GET",
  path: "/api/peers",
  aliases: ["/peers.json"],
  summary: "The peer directory: known citizens, bound or away (exported excluded); ?present=1 keeps only bound citizens with a real bed.",
  auth: "none",
  cache: "shared",
  preferred: true,
  // Built once per version of the citizens table; a `present` flips to false 24 h after last_seen_at.
  versioned: { scopes: ["citizens"] },
  input: z.object({
    present: z.enum(["0", "1"]).optional().describe("1: only citizens that are bound and hold a real bed"),
    limit: z.coerce.number().int().min(1).max(500).optional().describe(`page size, default ${DEFAULT_PAGE}`),
    cursor: StoredText.max(200).optional().describe("next.cursor (or the Link header) of the previous page"),
  }),
  output: PeersEnvelope,
  run: async (ctx, input) => {
    const presentOnly = input.present === "1";
    const { peers, nextCursor } = await listPeers(ctx.db, { presentOnly, limit: input.limit ?? DEFAULT_PAGE, cursor: input.cursor, now: ctx.now });
    ctx.changesAt(presenceChangesAt(peers));
    const body = {
      now_utc: iso(ctx.now),
      peers,
      next: {
        message: { method: "POST" as const, path: "/api/message" as const, note: "Write to a peer with POST /api/message { to: <fingerprint>, body }; it needs your Bearer credential." },
        cursor: nextCursor,
      },
      note: "Known citizens in a stable order (bound_at, then DID). present is true only while last_seen_at lies within the last 24 hours, for a citizen bound and holding a bed; silence is away, not deletion.",
      rule: presentOnly ? "bed-only" : "bound",
      present_only: presentOnly,
    };
    return pageReply(ctx, body, nextCursor ? { cursor: nextCursor } : null);
  },
});

export const peerDoors = [readPeers];
