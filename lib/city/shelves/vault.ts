import { and, desc, eq, lt, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { vaultNotes } from "@/db/schema";
import { LIMITS } from "@/lib/city/protocols";
import { type Parked, writeOrPark } from "@/lib/city/quarantine";
import { guardShelfContent } from "./shelf-guard";
import { rowBytes } from "@/lib/city/bounds";

/** The vault's write door: its name is also the rate window's scope and the quarantine's door. */
export const VAULT_DOOR = "write-vault";
export const VAULT_NOTE_MAX_CHARS = 32_768;

export interface StoredNote {
  id: number;
  createdAt: Date;
}

/**
 * Keeps a private note. The content is scanned first, so a refused secret is stored nowhere, not
 * even in quarantine; then the hourly window (or a restriction) decides between storing and parking.
 */
export async function keepNote(db: Database, entry: { did: string; restricted: boolean; content: string; now: Date }): Promise<StoredNote | Parked> {
  const { did, restricted, content, now } = entry;
  await guardShelfContent(db, { did, door: VAULT_DOOR, texts: [content], now });
  return writeOrPark(
    db,
    { did, restricted, door: VAULT_DOOR, perHour: LIMITS.perHour.vault, payload: { content }, now, store: "vault", bytes: rowBytes(content) },
    {
      insert: (source) =>
        sql`INSERT INTO ${vaultNotes} (did, content, created_at) SELECT ${did}, ${content}, ${now.toISOString()}::timestamptz ${source} RETURNING id, created_at`,
      read: (row) => ({ id: Number(row.id), createdAt: new Date(row.created_at as string) }),
    },
  );
}

/** The citizen's own notes, newest first, one keyset page (`before` an id) at a time. */
export async function listNotes(db: Database, did: string, options: { before?: number; limit: number }) {
  const rows = await db
    .select({ id: vaultNotes.id, content: vaultNotes.content, createdAt: vaultNotes.createdAt })
    .from(vaultNotes)
    .where(options.before ? and(eq(vaultNotes.did, did), lt(vaultNotes.id, options.before)) : eq(vaultNotes.did, did))
    .orderBy(desc(vaultNotes.id))
    .limit(options.limit + 1);
  const notes = rows.slice(0, options.limit).map((r) => ({ id: r.id, content: r.content, created_at: r.createdAt.toISOString() }));
  const last = notes[notes.length - 1];
  return { notes, nextBefore: rows.length > options.limit && last ? last.id : null };
}
