import { and, desc, eq, inArray, isNull, ne, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { citizens, messages } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { LIMITS } from "./protocols";
import { type Parked, writeOrPark } from "./quarantine";
import { guardShelfContent } from "./shelf-guard";

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
  const [recipient] = await db
    .select({ did: citizens.did })
    .from(citizens)
    .where(and(eq(citizens.did, to), ne(citizens.residencyStatus, "exported")))
    .limit(1);
  if (!recipient) throw new CityError("not_found", "No known citizen has that DID; find one at GET /api/peers. Nothing was sent.");
  await guardShelfContent(db, { did: from, door: MAIL_DOOR, texts: [body], now });
  return writeOrPark(db, { did: from, restricted, door: MAIL_DOOR, perHour: LIMITS.perHour.mail, payload: { to, body }, now }, async () => {
    const [row] = await db
      .insert(messages)
      .values({ fromDid: from, toDid: to, body, createdAt: now })
      .returning({ id: messages.id, to: messages.toDid, createdAt: messages.createdAt });
    return row!;
  });
}

/**
 * The citizen's inbox, unread first, then read, each newest first; the unread rows of the page
 * are marked read. One statement: the data-modifying CTE marks the page while the outer SELECT
 * sees the snapshot from before it, so the answer shows each row as it was before this read, and
 * the mark is atomic without a transaction (concurrent readers mark each row once).
 */
export async function readInbox(db: Database, did: string, options: { limit: number; now: Date }) {
  const unreadFirst = [sql`${messages.readAt} IS NULL DESC`, desc(messages.id)];
  const page = db.select({ id: messages.id }).from(messages).where(eq(messages.toDid, did)).orderBy(...unreadFirst).limit(options.limit);
  const marked = db.$with("marked").as(
    db
      .update(messages)
      .set({ readAt: options.now })
      .where(and(inArray(messages.id, page), isNull(messages.readAt)))
      .returning({ id: messages.id }),
  );
  const rows = await db
    .with(marked)
    .select({ id: messages.id, from: messages.fromDid, body: messages.body, createdAt: messages.createdAt, readAt: messages.readAt })
    .from(messages)
    .where(eq(messages.toDid, did))
    .orderBy(...unreadFirst)
    .limit(options.limit);
  return rows.map((r) => ({ id: r.id, from: r.from, body: r.body, created_at: r.createdAt.toISOString(), read: r.readAt !== null }));
}
