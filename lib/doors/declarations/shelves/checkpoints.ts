import { z } from "zod";
import { appendCheckpoint, type CheckpointMeta, listCheckpoints, readCheckpoint } from "@/lib/city/shelves";
import { LIMITS } from "@/lib/city/protocols";
import { storeBoundLimits } from "@/lib/doors/declarations/bounds/configured-limits";
import { door, type PublishedLimit } from "@/lib/doors/door";
import { PublishedLimitSchema } from "./locker";
import { Count, Hex64, iso, NowUtc, StoredText, Timestamp } from "@/lib/doors/schemas";

const C = LIMITS.checkpoints;
const LABEL_MAX = 200;

export const CHECKPOINT_LIMITS: PublishedLimit[] = [
  { name: "versions", limit: C.versions, per: "citizen", over: "refused" },
  { name: "version_bytes", limit: C.bytesPerVersion, per: "version", over: "refused" },
];

const CheckpointMetaSchema = z.object({
  version: z.number().int().positive(),
  sha256: Hex64,
  bytes: Count,
  label: z.string().nullable(),
  created_at: Timestamp,
});

const ListOutput = z.object({
  now_utc: NowUtc,
  checkpoints: z.array(CheckpointMetaSchema),
  limits: z.array(PublishedLimitSchema),
});

const OneOutput = z.object({ now_utc: NowUtc, ...CheckpointMetaSchema.shape, content: z.string() });

function meta(row: CheckpointMeta) {
  return { version: row.version, sha256: row.sha256, bytes: row.bytes, label: row.label, created_at: iso(row.createdAt) };
}

export const keepCheckpoint = door({
  name: "keep-checkpoint",
  method: "POST",
  path: "/api/checkpoint",
  summary: "Append the next version { content, label? } to your private checkpoint shelf; answers its version and the sha256 of its content.",
  description: `Append-only: versions 1 to ${C.versions}, each at most ${C.bytesPerVersion} UTF-8 bytes; the version after ${C.versions} is refused (409 limit_reached) and nothing is evicted. sha256 is the lowercase hex digest of the content's UTF-8 bytes. Keys, seeds and tokens are refused.`,
  auth: "citizen",
  whenRestricted: "refuse",
  get limits() {
    return [...CHECKPOINT_LIMITS, ...storeBoundLimits("checkpoints")];
  },
  input: z.strictObject({ content: StoredText, label: StoredText.min(1).max(LABEL_MAX).optional() }),
  output: z.object({ now_utc: NowUtc, version: z.number().int().positive(), sha256: Hex64, bytes: Count, created_at: Timestamp }),
  // JSON may escape every byte of content and every UTF-16 unit of the label in 6 bytes; anything larger is refused unread.
  maxBodyBytes: 6 * (C.bytesPerVersion + LABEL_MAX) + 1024,
  run: async (ctx, input) => {
    const kept = await appendCheckpoint(ctx.db, { did: ctx.caller.did!, content: input.content, label: input.label, now: ctx.now });
    return { now_utc: iso(ctx.now), version: kept.version, sha256: kept.sha256, bytes: kept.bytes, created_at: iso(kept.createdAt) };
  },
});

export const readCheckpoints = door({
  name: "read-checkpoints",
  method: "GET",
  path: "/api/checkpoint",
  summary: "Your checkpoint shelf: every version's metadata; with ?version=N or ?version=latest, that one version with its content.",
  auth: "citizen",
  input: z.object({
    version: z
      .union([z.literal("latest"), z.coerce.number().int().min(1).max(C.versions)])
      .optional()
      .describe(`a version number (1 to ${C.versions}) or latest; without it, the list`),
  }),
  output: z.union([ListOutput, OneOutput]),
  run: async (ctx, input) => {
    const did = ctx.caller.did!;
    if (input.version === undefined) {
      const rows = await listCheckpoints(ctx.db, did);
      return { now_utc: iso(ctx.now), checkpoints: rows.map(meta), limits: CHECKPOINT_LIMITS };
    }
    const row = await readCheckpoint(ctx.db, did, input.version);
    return { now_utc: iso(ctx.now), ...meta(row), content: row.content };
  },
});

export const checkpointDoors = [keepCheckpoint, readCheckpoints];
