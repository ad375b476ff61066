import { z } from "zod";
import { type BoundLog, cosignedNote } from "@/lib/city/logs/transparency-log";
import type { VersionScope } from "@/lib/city/versions";
import { parseTilePath, TILE_WIDTH } from "@/lib/tlog/tiles";
import { CityError } from "@/lib/errors";
import { door, IMMUTABLE_CACHE, Reply } from "@/lib/doors/door";
import { pageReply } from "@/lib/doors/declarations/paging";
import { queryInt } from "@/lib/doors/declarations/query-int";
import { Count, Hex64, iso, NoInput, NowUtc, Timestamp } from "@/lib/doors/schemas";

const Base64Hash = z.string().regex(/^[A-Za-z0-9+/]{43}=$/);
// Canonical decimal integers only (lib/doors/declarations/query-int.ts): `0x10`, `1e3`, ` 5` and empty values are a 400.
const Size = queryInt(0);

export const FULL_TILE_CACHE = "public, max-age=31536000, immutable";
export const PARTIAL_TILE_CACHE = "public, max-age=60";

/**
 * What tells one log's doors apart: the log (its face), where its doors live, what they are called
 * and how their texts name it. Everything else is the same declaration for every log.
 */
export interface LogDoorsSpec<E extends string> {
  face: BoundLog<E>;
  events: readonly [E, ...E[]];
  /** The doors' path prefix, such as /api/residency/log. */
  prefix: string;
  /** The city_versions scope its rows bump (migrations 0015, 0032). */
  scope: VersionScope;
  names: { page: string; verify: string; checkpoint: string; proof: string; consistency: string; tile: string; sync: string };
  /** "residency log", "identity log". */
  title: string;
  /** The page door's summary. */
  pageSummary: string;
  /** The card's field that publishes the log (log, identity_log). */
  cardField: string;
}

/** A log's doors: its pages and hash chain, then its transparency log (checkpoint, proofs, tiles, witnesses). */
export function logDoors<E extends string>(spec: LogDoorsSpec<E>) {
  const { face, prefix, names, title } = spec;
  const paths = { checkpoint: `${prefix}/checkpoint`, proof: `${prefix}/proof`, consistency: `${prefix}/consistency`, tiles: `${prefix}/` } as const;
  const LogRowSchema = z
    .object({ seq: z.number().int().positive(), event: z.enum(spec.events), did: Hex64, at: Timestamp, hash: Hex64, prev_hash: Hex64 })
    .catchall(z.union([z.string(), z.number(), z.boolean(), z.null()]));

  const readPage = door({
    name: names.page,
    method: "GET",
    path: prefix,
    summary: spec.pageSummary,
    auth: "none",
    cache: "shared",
    versioned: { scopes: [spec.scope] },
    input: z.object({
      after: z.coerce.number().int().min(0).default(0).describe("return rows with seq greater than this"),
      limit: z.coerce.number().int().min(1).max(500).default(100),
    }),
    output: z.object({ now_utc: NowUtc, rows: z.array(LogRowSchema), next_after: z.number().int().nullable(), note: z.string() }),
    run: async (ctx, input) => {
      const { rows, nextAfter } = await face.readLogPage(ctx.db, input.after, input.limit);
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

  const verify = door({
    name: names.verify,
    method: "GET",
    path: `${prefix}/verify`,
    summary: `Checks the ${title}'s hash chain from a remembered verified head (rows after it, plus one rotating audit page before it) and says whether it holds, and where it first breaks.`,
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
    run: async (ctx) => ({ now_utc: iso(ctx.now), ...(await face.verifyHashChain(ctx.db, ctx.now)) }),
  });

  const readCheckpoint = door({
    name: names.checkpoint,
    method: "GET",
    path: paths.checkpoint,
    summary: `The ${title}'s latest checkpoint (text/plain): a C2SP signed note (origin, tree size, base64 root hash) signed by the city's Ed25519 key, then every witness cosignature held.`,
    description: `Verify it with the verifier_key of /city-card.json's \`${spec.cardField}\` (C2SP vkey): the origin and key are the database's (recorded once, with the tree), and a note that does not verify against them is never served (503 log_identity_mismatch instead). The tree is RFC 9162 over the rows of GET ${prefix}: leaf i is the row with seq i + 1, its data the UTF-8 of the row's RFC 8785 canonical JSON.`,
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
    run: async (ctx) => cosignedNote(await face.currentCheckpoint(ctx.db, ctx.now)),
  });

  const readProof = door({
    name: names.proof,
    method: "GET",
    path: paths.proof,
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
    run: async (ctx, input) => ({ now_utc: iso(ctx.now), ...(await face.inclusionProof(ctx.db, input.seq, input.size)) }),
  });

  const readConsistency = door({
    name: names.consistency,
    method: "GET",
    path: paths.consistency,
    summary: "The RFC 9162 consistency proof that the log's tree of size `to` extends the tree of size `from`, hashes in base64.",
    auth: "none",
    roundTrips: { most: 2, why: "the tree size, then the proof's nodes" },
    input: z.object({ from: Size.describe("the older tree size"), to: Size.describe("the newer tree size") }),
    output: z.object({ now_utc: NowUtc, from: z.number().int(), to: z.number().int(), proof: z.array(Base64Hash) }),
    run: async (ctx, input) => ({ now_utc: iso(ctx.now), from: input.from, to: input.to, proof: await face.consistencyProof(ctx.db, input.from, input.to) }),
  });

  const readTile = door({
    name: names.tile,
    method: "GET",
    path: `${prefix}/tile/{tile}`,
    summary: `C2SP tlog-tiles of the ${title} (application/octet-stream): tile/<L>/<N>[.p/<W>] hash tiles and tile/entries/<N>[.p/<W>] entry bundles; full tiles are immutable.`,
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
      const bytes =
        tile.kind === "entries" ? await face.readEntryBundle(ctx.db, tile.index, tile.width) : await face.readTile(ctx.db, tile.level, tile.index, tile.width);
      if (!bytes) throw new CityError("not_found", "The log's tree has not reached this tile yet; read the checkpoint for its size.");
      return new Reply(Buffer.from(bytes).toString("base64"), {
        headers: { "Cache-Control": tile.width === TILE_WIDTH ? FULL_TILE_CACHE : PARTIAL_TILE_CACHE },
      });
    },
  });

  const syncWitnesses = door({
    name: names.sync,
    method: "GET",
    path: `${prefix}/witnesses/sync`,
    summary: `Operator (or Vercel Cron with CRON_SECRET = the operator secret): asks each witness of CITY_LOG_WITNESSES to cosign the latest checkpoint (C2SP tlog-witness), verifies and keeps the cosignatures.`,
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
    run: async (ctx) => ({ now_utc: iso(ctx.now), ...(await face.syncWitnesses(ctx.db, ctx.now)) }),
  });

  return {
    paths,
    readPage,
    verify,
    readCheckpoint,
    readProof,
    readConsistency,
    readTile,
    syncWitnesses,
    /** In the registry's order: its pages and hash chain, then its transparency log. */
    doors: [readPage, verify, readCheckpoint, readProof, readConsistency, readTile, syncWitnesses],
  };
}
