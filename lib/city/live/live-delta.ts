import type { RECOVERY_STEPS, RECOVERY_VIAS } from "@/db/schema";
import { type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { WAKE_ON, type WakeCondition } from "@/db/schema";
import { CONTRACT_TERMS_HASH, CONTRACT_VERSION } from "@/lib/city/contract";
import { LANTERN_SCAN_POSTS } from "@/lib/city/posts";
import { LIMITS } from "@/lib/city/protocols";

export interface ReturnDelta {
  since: string;
  since_clamped: boolean;
  law_changed: boolean;
  direct_messages: number;
  room_replies: number;
  lantern_matches: number;
  locker_bags: number;
  latest_checkpoint: { version: number; sha256: string; bytes: number; created_at: string } | null;
  checkpoint_hash_verified: boolean | null;
  peers_present: number;
  /** Your open step (CITY-KEYS/1: a recovery, or a lowering of your delay), if any: cancel it before opens_after if you did not ask it. */
  recovery_open: { opens_after: string; holds: number; step: (typeof RECOVERY_STEPS)[number]; via: (typeof RECOVERY_VIAS)[number] } | null;
  wake: WakeCondition[];
}

export interface DeltaRow {
  law_changed: boolean | null;
  direct_messages: number | string;
  room_replies: number | string;
  lantern_matches: number | string;
  locker_bags: number | string;
  peers_present: number | string;
  cp_version: number | string | null;
  cp_sha256: string | null;
  cp_bytes: number | string | null;
  cp_created_at: Date | string | null;
  cp_verified: boolean | null;
  recovery_opens_after: Date | string | null;
  recovery_holds: number | string | null;
  recovery_step: (typeof RECOVERY_STEPS)[number] | null;
  recovery_via: (typeof RECOVERY_VIAS)[number] | null;
}

/**
 * The concise return delta, counts only and never bodies, in one statement. Two kinds of count:
 * states, true now whatever the cursor (law changed, unread mail, locker bags, peers present), and
 * news since the cursor (room replies, lantern matches). No count reads more than one citizen's
 * own rows or the news since the cursor:
 * - unread mail is the recipient's row in inbox_counts, kept by triggers on messages (0019);
 * - peers present is the kept house count (census_counts' stripes, 0014, 0047) less the beds whose citizen was
 *   not seen within the presence window (read index-only from citizens_house_seen: those rows are
 *   the ones nobody writes to) and less the caller itself;
 * - room replies start from the caller's own room posts (posts_room_by_did) and read, for each,
 *   the replies newer than the cursor (posts_room_replies): the caller's rows and the news, never
 *   the whole table, with any plan: the count per post is an aggregate in a LATERAL, so it cannot
 *   be turned into a join that starts from the other side, and "newer than the cursor" is a row
 *   comparison only posts_room_replies can serve (a plain created_at > since would let a plan
 *   read all the news once per post of the caller's through posts_created_at);
 * - lantern matches read at most LANTERN_SCAN_POSTS posts, and only when the caller has a lantern;
 * - news is counted from `since`, clamped to the delta's window (clampSince; here, by returnDelta).
 */
export async function returnDelta(db: Database, did: string, asked: Date, wakeOn: readonly WakeCondition[], now: Date): Promise<ReturnDelta> {
  const { since, clamped } = clampSince(asked, now);
  const row = rowsOf<DeltaRow>(await db.execute(returnDeltaQuery(did, since, now)))[0]!;
  return deltaOf(row, since, wakeOn, clamped);
}

/**
 * The delta's window: news (room replies, lantern matches) counts from the cursor, but never from
 * further back than LIMITS.deltaWindowSeconds before now. A cursor older than that (or a last poll,
 * or a binding, when no cursor is sent) is clamped to the window's start, and the answer says so:
 * `since` is the window's start and `since_clamped` is true. What a poll reads of the news is
 * then bounded by the window, however old the cursor.
 */
export function deltaWindowStart(now: Date): Date {
  return new Date(now.getTime() - LIMITS.deltaWindowSeconds * 1000);
}

export function clampSince(asked: Date, now: Date): { since: Date; clamped: boolean } {
  const start = deltaWindowStart(now);
  return asked.getTime() < start.getTime() ? { since: start, clamped: true } : { since: asked, clamped: false };
}

/** clampSince in SQL, for a `since` the statement reads itself (the poll's last poll or binding). */
export function deltaSinceSql(asked: SQL, now: Date): SQL {
  return sql`greatest(${asked}, ${deltaWindowStart(now).toISOString()}::timestamptz)`;
}

export function deltaClampedSql(asked: SQL, now: Date): SQL {
  return sql`(${asked} < ${deltaWindowStart(now).toISOString()}::timestamptz)`;
}

/** The delta of a row selected with returnDeltaColumns (and deltaLaterals, `cp` and `rec`). */
export function deltaOf(row: DeltaRow, since: Date, wakeOn: readonly WakeCondition[], clamped: boolean): ReturnDelta {
  const law = row.law_changed === true;
  const mail = Number(row.direct_messages);
  const replies = Number(row.room_replies);
  const lanterns = Number(row.lantern_matches);
  const met: Record<WakeCondition, boolean> = {
    direct_message: mail > 0,
    room_reply: replies > 0,
    lantern_match: lanterns > 0,
    law_changed: law,
  };
  return {
    since: since.toISOString(),
    since_clamped: clamped,
    law_changed: law,
    direct_messages: mail,
    room_replies: replies,
    lantern_matches: lanterns,
    locker_bags: Number(row.locker_bags),
    latest_checkpoint:
      row.cp_version === null
        ? null
        : { version: Number(row.cp_version), sha256: row.cp_sha256!, bytes: Number(row.cp_bytes), created_at: new Date(row.cp_created_at!).toISOString() },
    checkpoint_hash_verified: row.cp_version === null ? null : row.cp_verified === true,
    peers_present: Number(row.peers_present),
    recovery_open:
      row.recovery_opens_after === null
        ? null
        : {
            opens_after: new Date(row.recovery_opens_after).toISOString(),
            holds: Number(row.recovery_holds),
            step: row.recovery_step!,
            via: row.recovery_via!,
          },
    wake: WAKE_ON.filter((c) => wakeOn.includes(c) && met[c]),
  };
}

/** The delta's one statement (exported for the plan check in scripts/bench-explain.ts). */
export function returnDeltaQuery(did: string, since: Date, now: Date): SQL {
  return sql`SELECT ${returnDeltaColumns(did, sql`${since.toISOString()}::timestamptz`, now)} FROM (SELECT 1) AS one ${deltaLaterals(did)}`;
}

/**
 * The delta's columns, counted from `from` (a timestamptz expression: a parameter, or a column
 * of the statement they are part of, such as the poll's in lib/city/live/live.ts), with the latest
 * checkpoint's and the open step's from deltaLaterals joined as `cp` and `rec`.
 */
export function returnDeltaColumns(did: string, from: SQL, now: Date): SQL {
  const presentSince = new Date(now.getTime() - LIMITS.presenceSeconds * 1000).toISOString();
  // The silent beds' cutoff is a subquery: its value is then unknown to every plan alike, so the
  // plan PostgreSQL makes without the parameters (a prepared poll's generic plan) is not estimated
  // dearer than one made with them, and is kept (BENCHMARKS.md: the poll as a named prepared statement).
  return sql`
      (SELECT a.version <> ${CONTRACT_VERSION} OR a.terms_hash <> ${CONTRACT_TERMS_HASH}
         FROM residency_acceptances a WHERE a.did = ${did}
         ORDER BY a.accepted_at DESC, a.id DESC LIMIT 1) AS law_changed,
      coalesce((SELECT i.unread FROM inbox_counts i WHERE i.did = ${did}), 0) AS direct_messages,
      (SELECT coalesce(sum(replies.n), 0) FROM posts mine
        CROSS JOIN LATERAL (
          SELECT count(*) AS n FROM posts r
          WHERE r.reply_to = mine.id AND (r.reply_to, r.created_at) > (mine.id, ${from}) AND r.board = 'room' AND r.did <> ${did}
        ) replies
        WHERE mine.did = ${did} AND mine.board = 'room') AS room_replies,
      CASE WHEN EXISTS (SELECT 1 FROM lanterns l WHERE l.did = ${did}) THEN (
        SELECT count(*) FROM (
          SELECT p.did, p.body, p.created_at FROM posts p
          WHERE p.created_at > ${from}
          ORDER BY p.created_at DESC LIMIT ${LANTERN_SCAN_POSTS}
        ) recent
        WHERE EXISTS (
          SELECT 1 FROM lanterns l
          WHERE l.did = ${did} AND recent.did <> l.did AND recent.created_at > l.created_at AND strpos(lower(recent.body), l.keyword) > 0
        )) ELSE 0 END AS lantern_matches,
      (SELECT count(*) FROM locker_bags b WHERE b.did = ${did}) AS locker_bags,
      (SELECT sum(house)::int FROM census_counts)
        - (SELECT count(*) FROM citizens s WHERE s.residency_status = 'bound' AND s.bed_id IS NOT NULL AND s.last_seen_at <= (SELECT ${presentSince}::timestamptz))
        - (SELECT count(*) FROM citizens s WHERE s.residency_status = 'bound' AND s.bed_id IS NOT NULL AND s.last_seen_at IS NULL)
        - (SELECT count(*) FROM citizens s WHERE s.did = ${did} AND s.residency_status = 'bound' AND s.bed_id IS NOT NULL AND s.last_seen_at > ${presentSince}::timestamptz)
        AS peers_present,
      cp.version AS cp_version, cp.sha256 AS cp_sha256, cp.bytes AS cp_bytes, cp.created_at AS cp_created_at, cp.verified AS cp_verified,
      rec.opens_after AS recovery_opens_after, rec.holds AS recovery_holds, rec.step AS recovery_step, rec.via AS recovery_via`;
}

/** The latest checkpoint of `did` as `cp` and its open step as `rec` (one probe of recoveries for all its columns), for returnDeltaColumns. */
export function deltaLaterals(did: string): SQL {
  return sql`
    LEFT JOIN LATERAL (
      SELECT c.version, c.sha256, c.bytes, c.created_at, c.sha256 = encode(sha256(convert_to(c.content, 'UTF8')), 'hex') AS verified
      FROM checkpoints c WHERE c.did = ${did} ORDER BY c.version DESC LIMIT 1
    ) cp ON true
    LEFT JOIN recoveries rec ON rec.did = ${did} AND rec.state = 'open'`;
}
