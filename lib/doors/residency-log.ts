import { z } from "zod";
import {
  consistencyProof,
  cosignedNote,
  currentCheckpoint,
  inclusionProof,
  readEntryBundle,
  readLogPage,
  readTile,
  syncWitnesses,
  verifyHashChain,
} from "@/lib/city/residency-log";
import { LOG_EVENTS } from "@/db/schema";
import { parseTilePath, TILE_WIDTH } from "@/lib/tlog/tiles";
import { CityError } from "@/lib/errors";
import { door, IMMUTABLE_CACHE, Reply } from "./door";
import { pageReply } from "./paging";
import { queryInt } from "./query-int";
import { Count, Hex64, iso, NoInput, NowUtc, Timestamp } from "./schemas";

const Base64Hash = z.string().regex(/^[A-Za-z0-9+/]{43}=$/);
// Canonical decimal integers only (lib/doors/query-int.ts): `0x10`, `1e3`, ` 5` and empty values are a 400.
const Size = queryInt(0);

const LogRowSchema = z
  .object({ seq: z.number().int().positive(), event: z.enum(LOG_EVENTS), did: Hex64, at: Timestamp, hash: Hex64, prev_hash: Hex64 })
  .catchall(z.union([z.string(), z.number(), z.boolean(), z.null()]));

export const readResidencyLog = door({
  name: "read-residency-log",
  method: "GET",
  path: "/api/residency/log",
  summary: "The append-only residency log (admit, exit, return, export), oldest first, hash-chained; page with ?after=<seq>&limit=<n>.",
  auth: "none",
  cache: "shared",
  versioned: { scopes: ["residency_log"] },
  input: z.object({
    after: z.coerce.number().int().min(0).default(0).describe("return rows with seq greater than this"),
    limit: z.coerce.number().int().min(1).max(500).default(100),
  }),
  output: z.object({ now_utc: NowUtc, rows: z.array(LogRowSchema), next_after: z.number().int().nullable(), note: z.string() }),
  run: async (ctx, input) => {
    const { rows, nextAfter } = await readLogPage(ctx.db, input.after, input.limit);
    return pageReply(
      ctx,
      {
        now_utc: iso(ctx.now),
        rows,
        next_after: nextAfter,
        note: "Each row's hash is the sha256 of the canonical JSON (keys sorted, no white space) of the row without its hash; prev_hash names the row before (64 zeros for the first). No row is ever changed: the database refuses UPDATE, DELETE and TRUNCATE.",
        // A page with rows after it lies wholly below the head: append-only rows, so it never changes.
      },
      nextAfter === null ? null : { after: nextAfter },
      { "Cache-Control": IMMUTABLE_CACHE },
    );
  },
});

export const verifyResidencyLog = door({
  name: "verify-residency-log",
  method: "GET",
  path: "/api/residency/log/verify",
  summary:
    "Checks the residency log's hash chain from a remembered verified head (rows after it, plus one rotating audit page before it) and says whether it holds, and where it first breaks.",
  auth: "none",
  // It remembers the verified head and moves the audit page: bookkeeping rows, never the log.
  hints: { readOnly: false, idempotent: false },
  roundTrips: {
    most: 5,
    why: "reads the remembered head and its row, one audit page before it, the rows after it (one more page per 1000 rows appended since the last verification) and moves the head: bounded work per call, never the whole chain at once",
  },
  input: NoInput,
  output: z.object({
    now_utc: NowUtc,
    intact: z.boolean(),
    rows_checked: Count,
    head_hash: Hex64,
    first_broken: z.object({ seq: z.number().int(), reason: z.string() }).nullable(),
  }),
  run: async (ctx) => ({ now_utc: iso(ctx.now), ...(await verifyHashChain(ctx.db, ctx.now)) }),
});

export const LOG_PATHS = {
  checkpoint: "/api/residency/log/checkpoint",
  proof: "/api/residency/log/proof",
  consistency: "/api/residency/log/consistency",
  tiles: "/api/residency/log/",
} as const;

export const readLogCheckpoint = door({
  name: "read-log-checkpoint",
  method: "GET",
  path: LOG_PATHS.checkpoint,
  summary:
    "The residency log's latest checkpoint (text/plain): a C2SP signed note (origin, tree size, base64 root hash) signed by the city's Ed25519 key, then every witness cosignature held.",
  description:
    "Verify it with the verifier_key of /city-card.json's `log` (C2SP vkey): the origin and key are the database's (recorded once, with the tree), and a note that does not verify against them is never served (503 log_identity_mismatch instead). The tree is RFC 9162 over the rows of GET /api/residency/log: leaf i is the row with seq i + 1, its data the UTF-8 of the row's RFC 8785 canonical JSON.",
  auth: "none",
  produces: "text",
  // Builds the tree over rows from before it existed, once (under the log's lock): bookkeeping rows, never the log.
  hints: { readOnly: false, idempotent: true },
  roundTrips: {
    most: 9,
    why: "one read of the latest checkpoint with its cosignatures; an instance's first answer also reads the log's identity (on a new city records it: read, insert, read the winner); only while the tree lags the log (once, after the migration) the lock, the catch-up pages and a second read",
  },
  input: NoInput,
  output: z.string(),
  run: async (ctx) => cosignedNote(await currentCheckpoint(ctx.db, ctx.now)),
});

export const readLogProof = door({
  name: "read-log-proof",
  method: "GET",
  path: LOG_PATHS.proof,
  summary:
    "The RFC 9162 inclusion proof of log row `seq` in the tree of `size` (default the latest), hashes in base64, with the signed checkpoint of that size when the city holds it.",
  auth: "none",
  roundTrips: {
    most: 4,
    why: "the tree size, then the proof's nodes and the checkpoint of that size side by side; an instance's first answer also reads the log's identity, which the checkpoint must verify against",
  },
  input: z.object({
    seq: queryInt(1).describe("the row's seq (leaf index + 1)"),
    size: queryInt(1).optional().describe("the tree size; default the latest"),
  }),
  output: z.object({
    now_utc: NowUtc,
    seq: z.number().int(),
    leaf_index: z.number().int(),
    tree_size: z.number().int(),
    proof: z.array(Base64Hash),
    checkpoint: z.string().nullable(),
  }),
  run: async (ctx, input) => ({ now_utc: iso(ctx.now), ...(await inclusionProof(ctx.db, input.seq, input.size)) }),
});

export const readLogConsistency = door({
  name: "read-log-consistency",
  method: "GET",
  path: LOG_PATHS.consistency,
  summary: "The RFC 9162 consistency proof that the log's tree of size `to` extends the tree of size `from`, hashes in base64.",
  auth: "none",
  roundTrips: { most: 2, why: "the tree size, then the proof's nodes" },
  input: z.object({ from: Size.describe("the older tree size"), to: Size.describe("the newer tree size") }),
  output: z.object({ now_utc: NowUtc, from: z.number().int(), to: z.number().int(), proof: z.array(Base64Hash) }),
  run: async (ctx, input) => ({ now_utc: iso(ctx.now), from: input.from, to: input.to, proof: await consistencyProof(ctx.db, input.from, input.to) }),
});

export const FULL_TILE_CACHE = "public, max-age=31536000, immutable";
export const PARTIAL_TILE_CACHE = "public, max-age=60";

export const readLogTile = door({
  name: "read-log-tile",
  method: "GET",
  path: "/api/residency/log/tile/{tile}",
  summary:
    "C2SP tlog-tiles of the residency log (application/octet-stream): tile/<L>/<N>[.p/<W>] hash tiles and tile/entries/<N>[.p/<W>] entry bundles; full tiles are immutable.",
  description: "Over MCP and A2A the tile comes as base64 text. A tile the tree has not reached yet is a 404 problem.",
  auth: "none",
  produces: "binary",
  roundTrips: { most: 2, why: "an entry bundle reads its rows and the tree size side by side" },
  input: z.object({
    tile: z
      .string()
      .max(80)
      .regex(/^[a-z0-9./]+$/, "a tile path: lower-case letters, digits, dots and slashes")
      .describe("the path below tile/, such as 0/x001/234 or entries/000.p/17"),
  }),
  output: z.string(),
  run: async (ctx, input) => {
    const tile = parseTilePath(input.tile);
    const bytes = tile.kind === "entries" ? await readEntryBundle(ctx.db, tile.index, tile.width) : await readTile(ctx.db, tile.level, tile.index, tile.width);
    if (!bytes) throw new CityError("not_found", "The log's tree has not reached this tile yet; read the checkpoint for its size.");
    return new Reply(Buffer.from(bytes).toString("base64"), { headers: { "Cache-Control": tile.width === TILE_WIDTH ? FULL_TILE_CACHE : PARTIAL_TILE_CACHE } });
  },
});

export const syncLogWitnesses = door({
  name: "sync-log-witnesses",
  method: "GET",
  path: "/api/residency/log/witnesses/sync",
  summary:
    "Operator (or Vercel Cron with CRON_SECRET = the operator secret): asks each witness of CITY_LOG_WITNESSES to cosign the latest checkpoint (C2SP tlog-witness), verifies and keeps the cosignatures.",
  description:
    "Bounded in time (8 s in all, each witness's whole answer within it); no network call happens inside a write. A witness's answer is trusted for nothing: at most 4096 bytes of it are read, a redirect is not followed, a cosignature dated more than an hour from the city's clock is refused, and each witness gets one of the four outcomes whatever the others do. `npm run log-witness-sync` does the same from any scheduler.",
  auth: "operator",
  // GET because Vercel Cron calls GET; it keeps cosignatures (bookkeeping rows, never the log).
  hints: { readOnly: false, idempotent: true },
  input: NoInput,
  output: z.object({
    now_utc: NowUtc,
    size: z.number().int(),
    witnesses: z.array(
      z.object({ witness: z.string(), outcome: z.enum(["cosigned", "current", "refused", "unreachable"]), size: z.number().int(), detail: z.string() }),
    ),
  }),
  run: async (ctx) => ({ now_utc: iso(ctx.now), ...(await syncWitnesses(ctx.db, ctx.now)) }),
});

/** The residency log's doors: its pages and hash chain, then its transparency log (checkpoint, proofs, tiles, witnesses). */
export const residencyLogDoors = [readResidencyLog, verifyResidencyLog, readLogCheckpoint, readLogProof, readLogConsistency, readLogTile, syncLogWitnesses];
