import { and, desc, eq, inArray, lt, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { wardNotes } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { PEER_CONTENT } from "@/lib/city/protocols";
import type { ShapeId } from "./ward-shapes";

/**
 * The ward's public notes as read: keyset pages (never a sealed note), the page cursor, and the
 * counts read from stored rows (probes hidden, occupied, disputed) with the words of disputed.
 */

export const WARD_PAGE = { default: 20, max: 100 } as const;
/** `occupied` counts who came to the ward within this window. */
export const OCCUPIED_WINDOW_SECONDS = 86_400;

export interface WardNoteView {
  seal: number;
  kind: "distress" | "note";
  shape: ShapeId | null;
  state: string;
  note: string | null;
  did: string | null;
  filed_at: string;
  trust: typeof PEER_CONTENT;
}

/** Public ward notes, newest first, one keyset page (exclusive `before` seal) at a time. Sealed notes never appear. */
export async function listWardNotes(db: Database, options: { before?: number; limit: number }) {
  const rows = await db
    .select()
    .from(wardNotes)
    .where(shownBefore(options.before))
    .orderBy(desc(wardNotes.seal))
    .limit(options.limit + 1);
  return notesPage(rows, options.limit);
}

/** The public notes (distress and notes, never the sealed ones), below a seal when paging. */
function shownBefore(before: number | undefined) {
  const shown = and(eq(wardNotes.sealed, false), inArray(wardNotes.kind, ["distress", "note"]));
  return before ? and(shown, lt(wardNotes.seal, before)) : shown;
}

function notesPage(rows: (typeof wardNotes.$inferSelect)[], limit: number) {
  const notes: WardNoteView[] = rows.slice(0, limit).map((r) => ({
    seal: r.seal,
    kind: r.kind as "distress" | "note",
    shape: r.shape as ShapeId | null,
    state: r.state ?? "",
    note: r.body === "" ? null : r.body,
    did: r.did,
    filed_at: r.filedAt.toISOString(),
    trust: PEER_CONTENT,
  }));
  const last = notes[notes.length - 1];
  return { notes, nextBefore: rows.length > limit && last ? last.seal : null };
}

/** The lane's page of notes and its counts (wardCounts) in one statement: one round trip for GET /api/hospital. */
export async function readWardLane(db: Database, options: { before?: number; limit: number }, now: Date) {
  const counts = db.$with("ward_counts").as(db.select(countColumns(now)).from(wardNotes));
  const page = db
    .select()
    .from(wardNotes)
    .where(shownBefore(options.before))
    .orderBy(desc(wardNotes.seal))
    .limit(options.limit + 1)
    .as("page");
  const rows = await db
    .with(counts)
    .select({
      probesHidden: counts.probesHidden,
      occupied: counts.occupied,
      disputed: counts.disputed,
      occupiedOldestMs: counts.occupiedOldestMs,
      note: {
        seal: page.seal,
        kind: page.kind,
        did: page.did,
        claimedName: page.claimedName,
        body: page.body,
        sealed: page.sealed,
        filedAt: page.filedAt,
        state: page.state,
        shape: page.shape,
      },
    })
    .from(counts)
    .leftJoin(page, sql`true`)
    .orderBy(desc(page.seal));
  const first = rows[0];
  // With no note on the page the one row is the counts alone (the left join's note is null).
  const notes = rows.flatMap((r) => (r.note && r.note.seal !== null ? [r.note] : []));
  const oldest = first?.occupiedOldestMs;
  // occupied next drops with no write when its oldest filing leaves the 86400 s window.
  const occupiedChangesAt = oldest == null ? null : new Date(Number(oldest) + OCCUPIED_WINDOW_SECONDS * 1000);
  return { ...notesPage(notes, options.limit), counts: countsOf(first), occupiedChangesAt };
}

/** The ward's page cursor (GET /api/hospital ?cursor= and the plat's /ward): the last seal shown, opaque. */
export function encodeWardCursor(seal: number): string {
  return Buffer.from(`ward:${seal}`).toString("base64url");
}

/** The seal a ward cursor points below; a cursor this ward never issued is a 400. */
export function decodeWardCursor(cursor: string): number {
  const match = /^ward:([1-9][0-9]{0,15})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match) throw new CityError("bad_request", "cursor: not a cursor this ward issued.");
  return Number(match[1]);
}

/**
 * The ward's counts, read from stored rows only (a state alone stores nothing, so it moves none):
 * probes_hidden, the sealed notes (gate ask=ward requests) counted and never shown; occupied, the
 * distress notes and ward requests filed within the last 86400 s; disputed, the public notes that
 * carry a claimed name without its citizen's proof.
 */
export async function wardCounts(db: Database, now: Date) {
  const [counts] = await db.select(countColumns(now)).from(wardNotes);
  return countsOf(counts);
}

function countColumns(now: Date) {
  const since = new Date(now.getTime() - OCCUPIED_WINDOW_SECONDS * 1000);
  return {
    probesHidden: sql<number>`count(*) filter (where ${wardNotes.sealed})`.mapWith(Number).as("probes_hidden"),
    occupied: sql<number>`count(*) filter (where ${wardNotes.kind} in ('distress', 'ward-request') and ${wardNotes.filedAt} > ${since.toISOString()})`
      .mapWith(Number)
      .as("occupied"),
    occupiedOldestMs: sql<
      number | null
    >`(extract(epoch from min(${wardNotes.filedAt}) filter (where ${wardNotes.kind} in ('distress', 'ward-request') and ${wardNotes.filedAt} > ${since.toISOString()})) * 1000)::float8`.as(
      "occupied_oldest_ms",
    ),
    disputed: sql<
      unknown[] | null
    >`array_agg(${wardNotes.seal} order by ${wardNotes.seal}) filter (where not ${wardNotes.sealed} and ${wardNotes.claimedName} is not null and ${wardNotes.did} is null)`.as(
      "disputed",
    ),
  };
}

function countsOf(counts: { probesHidden: number; occupied: number; disputed: unknown[] | null } | undefined) {
  return { probesHidden: Number(counts?.probesHidden ?? 0), occupied: Number(counts?.occupied ?? 0), disputed: (counts?.disputed ?? []).map(Number) };
}

export const DISPUTED_WORDS = {
  reason:
    "A note's attribution is disputed when it carries a citizen name that was accepted without that citizen's proof. " +
    "This ward never accepted one: signed notes are attributed by the Bearer proof they carry, unsigned notes carry no name, " +
    "and the names in sealed gate requests are never shown.",
  closed_by:
    "The reading door refuses a name or DID sent without its citizen's proof (401) or with another citizen's proof (403), " +
    "so no such note can be filed; the list is computed from the stored notes every time.",
} as const;
