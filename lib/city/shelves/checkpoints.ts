import { and, asc, desc, eq, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { checkpoints } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { sha256Hex } from "@/lib/city/canonical";
import { utf8Bytes } from "./locker";
import { LIMITS } from "@/lib/city/protocols";
import { guardShelfContent } from "./shelf-guard";
import { type Charge, chargeSql, cityFull, newcomerSql, rowBytes, citizenShare } from "@/lib/city/bounds";

const C = LIMITS.checkpoints;

export interface CheckpointMeta {
  version: number;
  sha256: string;
  bytes: number;
  label: string | null;
  createdAt: Date;
}

const META = {
  version: checkpoints.version,
  sha256: checkpoints.sha256,
  bytes: checkpoints.bytes,
  label: checkpoints.label,
  createdAt: checkpoints.createdAt,
};

/**
 * Appends the caller's next checkpoint version with the sha256 of its content's UTF-8 bytes.
 * The shelf is append-only, so the version after the last allowed is refused and nothing is evicted.
 */
export async function appendCheckpoint(
  db: Database,
  entry: { did: string; content: string; label?: string; now: Date },
): Promise<Omit<CheckpointMeta, "label">> {
  const { did, content, now } = entry;
  const bytes = utf8Bytes(content);
  if (bytes > C.bytesPerVersion) {
    throw new CityError(
      "payload_too_large",
      `A checkpoint holds at most ${C.bytesPerVersion} bytes of UTF-8 content; this one has ${bytes}. Nothing was stored.`,
      {
        limit: { name: "version_bytes", limit: C.bytesPerVersion },
      },
    );
  }
  await guardShelfContent(db, { did, door: "keep-checkpoint", texts: entry.label === undefined ? [content] : [content, entry.label], now });

  // One statement: the next version is numbered from the shelf's count and stored only while the
  // shelf has room. The door holds the citizen's row exclusively from its caller look-up, an
  // earlier statement of the same transaction, so parallel writes of one citizen run in turn and
  // each counts what the one before committed: no two share a number or pass the limit.
  // The city-wide store bound is charged in the same statement, only while the shelf has room, and
  // the version is stored only from the charge (lib/city/bounds/store-bounds.ts).
  const sha256 = sha256Hex(content);
  const charge: Charge = { store: "checkpoints", bytes: rowBytes(content, entry.label), newcomer: newcomerSql(did, now), now, subject: citizenShare(did) };
  const result = await db.execute(sql`
    WITH kept AS (SELECT count(*)::int AS n FROM ${checkpoints} WHERE did = ${did}),
    charged AS (${chargeSql(charge, sql`FROM kept WHERE kept.n < ${C.versions}::int`)}),
    stored AS (
      INSERT INTO ${checkpoints} (did, version, content, sha256, bytes, label, created_at)
      SELECT ${did}, kept.n + 1, ${content}, ${sha256}, ${bytes}::int, ${entry.label ?? null}::text, ${now.toISOString()}::timestamptz
      FROM kept, charged
      RETURNING version)
    SELECT (SELECT version FROM stored) AS version, kept.n FROM kept`);
  const [row] = rowsOf<{ version: number | null; n: number }>(result);
  if (!row || row.version === null) {
    if (row && Number(row.n) < C.versions) throw await cityFull(db, charge);
    throw new CityError(
      "limit_reached",
      `Your checkpoint shelf holds at most ${C.versions} versions and is full; it is append-only, so nothing was stored or evicted.`,
      {
        limit: { name: "versions", limit: C.versions, remaining: 0 },
      },
    );
  }
  return { version: Number(row.version), sha256, bytes, createdAt: now };
}

/** The caller's versions' metadata, oldest first, in one query. */
export async function listCheckpoints(db: Database, did: string): Promise<CheckpointMeta[]> {
  return db.select(META).from(checkpoints).where(eq(checkpoints.did, did)).orderBy(asc(checkpoints.version));
}

/** One of the caller's versions (or the latest) with its content; 404 when absent. */
export async function readCheckpoint(db: Database, did: string, version: number | "latest"): Promise<CheckpointMeta & { content: string }> {
  const query = db.select({ ...META, content: checkpoints.content }).from(checkpoints);
  const [row] =
    version === "latest"
      ? await query.where(eq(checkpoints.did, did)).orderBy(desc(checkpoints.version)).limit(1)
      : await query.where(and(eq(checkpoints.did, did), eq(checkpoints.version, version)));
  if (!row) {
    throw new CityError("not_found", version === "latest" ? "Your checkpoint shelf is empty." : `Your checkpoint shelf has no version ${version}.`);
  }
  return row;
}

/**
 * The latest version's metadata and whether its stored sha256 still matches its content, in one
 * query (the hash is recomputed by the database), for the return delta. Null when the shelf is empty.
 */
export async function latestCheckpoint(db: Database, did: string): Promise<(CheckpointMeta & { verified: boolean }) | null> {
  const [row] = await db
    .select({ ...META, verified: sql<boolean>`${checkpoints.sha256} = encode(sha256(convert_to(${checkpoints.content}, 'UTF8')), 'hex')` })
    .from(checkpoints)
    .where(eq(checkpoints.did, did))
    .orderBy(desc(checkpoints.version))
    .limit(1);
  return row ?? null;
}
