import { and, desc, eq, inArray, isNotNull, isNull, lt, lte, or, sql, type SQL } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { citizens, messages } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { LIMITS } from "@/lib/city/protocols";
import { type Parked, writeOrPark } from "@/lib/city/quarantine";
import { guardShelfContent, isClean } from "@/lib/city/shelves";
import { rowBytes } from "@/lib/city/bounds";

/** The mail's write door: its name is also the rate window's scope and the quarantine's door. */
export const MAIL_DOOR = "send-message";
export const MAIL_BODY_MAX_CHARS = 8_192;

export interface SentMessage {
  id: number;
  to: string;
  createdAt: Date;
}

/**
 * Sends mail by DID to any known citizen, bound or away, with a bed or not (a directory row is
 * not a bed); an unknown or exported DID is a 404 that counts nothing. The body is scanned before
 * it is stored or parked, so a refused secret is kept nowhere.
 */
export async function sendMessage(
  db: Database,
  entry: { from: string; restricted: boolean; to: string; body: string; now: Date },
): Promise<SentMessage | Parked> {
  const { from, restricted, to, body, now } = entry;
  const known = sql`EXISTS (SELECT 1 FROM ${citizens} WHERE did = ${to} AND residency_status <> 'exported')`;
  const unknown = () => new CityError("not_found", "No known citizen has that DID; find one at GET /api/peers. Nothing was sent.");
  // A refused secret is counted after the recipient check, as ever (a refusal's own statements).
  if (!isClean(body)) {
    const [recipient] = rowsOf<{ known: boolean }>(await db.execute(sql`SELECT ${known} AS known`));
    if (!recipient?.known) throw unknown();
    await guardShelfContent(db, { did: from, door: MAIL_DOOR, texts: [body], now });
  }
  // The recipient is checked in the write's own statement; unknown, the answer is 404 and the
  // transaction rolls back, so nothing is counted, sent or parked.
  return writeOrPark(
    db,
    { did: from, restricted, door: MAIL_DOOR, perHour: LIMITS.perHour.mail, payload: { to, body }, now, store: "mail", bytes: rowBytes(body) },
    {
      insert: (source) =>
        sql`INSERT INTO ${messages} (from_did, to_did, body, created_at) SELECT ${from}, ${to}, ${body}, ${now.toISOString()}::timestamptz ${source} RETURNING id, to_did, created_at`,
      read: (row) => ({ id: Number(row.id), to: row.to_did as string, createdAt: new Date(row.created_at as string) }),
      needs: { condition: known, refusal: unknown },
    },
  );
}

export const INBOX_PAGE = { default: 50, max: 200 } as const;

/** Where an inbox page ends: the section (unread, then read) and the last id shown. */
interface InboxCursor {
  unread: boolean;
  id: number;
}

export function encodeInboxCursor(c: InboxCursor): string {
  return Buffer.from(`${c.unread ? "unread" : "read"}|${c.id}`).toString("base64url");
}

function decodeInboxCursor(cursor: string): InboxCursor {
  const match = /^(unread|read)\|([1-9]\d{0,15})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match) throw new CityError("bad_request", "cursor: not a cursor this inbox issued.");
  return { unread: match[1] === "unread", id: Number(match[2]) };
}

/**
 * The citizen's inbox, unread first, then read, each newest first, one keyset page at a time.
 * Reading changes nothing: mail is marked read only by the explicit write (markRead). A row marked
 * read during a walk moves to the read section, where the walk meets it again, shown as read.
 */
export async function readInbox(db: Database, did: string, options: { limit: number; cursor?: string }) {
  const unread = isNull(messages.readAt);
  const filters: SQL[] = [eq(messages.toDid, did)];
  if (options.cursor) {
    const at = decodeInboxCursor(options.cursor);
    filters.push(at.unread ? or(and(unread, lt(messages.id, at.id)), isNotNull(messages.readAt))! : and(isNotNull(messages.readAt), lt(messages.id, at.id))!);
  }
  const rows = await db
    .select({ id: messages.id, from: messages.fromDid, body: messages.body, createdAt: messages.createdAt, readAt: messages.readAt })
    .from(messages)
    .where(and(...filters))
    .orderBy(sql`${messages.readAt} IS NULL DESC`, desc(messages.id))
    .limit(options.limit + 1);
  const shown = rows
    .slice(0, options.limit)
    .map((r) => ({ id: r.id, from: r.from, body: r.body, created_at: r.createdAt.toISOString(), read: r.readAt !== null }));
  const last = shown[shown.length - 1];
  return { messages: shown, nextCursor: rows.length > options.limit && last ? encodeInboxCursor({ unread: !last.read, id: last.id }) : null };
}

/**
 * The explicit write that marks mail read: the caller's own unread messages named by id, or every
 * one up to and including an id. Marking again changes nothing; another citizen's mail is never touched.
 */
export async function markRead(db: Database, did: string, target: { ids?: number[]; up_to?: number }, now: Date): Promise<number[]> {
  const which = target.ids !== undefined ? inArray(messages.id, target.ids) : lte(messages.id, target.up_to!);
  const marked = await db
    .update(messages)
    .set({ readAt: now })
    .where(and(eq(messages.toDid, did), isNull(messages.readAt), which))
    .returning({ id: messages.id });
  return marked.map((m) => m.id).sort((a, b) => a - b);
}
