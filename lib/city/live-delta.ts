import { type SQL, sql } from "drizzle-orm";
import { type Database, rowsOf } from "@/db/client";
import { WAKE_ON, type WakeCondition } from "@/db/schema";
import { CONTRACT_TERMS_HASH, CONTRACT_VERSION } from "./contract";
import { LANTERN_SCAN_POSTS } from "./lanterns";
import { LIMITS } from "./protocols";

export interface ReturnDelta {
  since: string;
  law_changed: boolean;
  direct_messages: number;
  room_replies: number;
  lantern_matches: number;
  locker_bags: number;
  latest_checkpoint: { version: number; sha256: string; bytes: number; created_at: string } | null;
  checkpoint_hash_verified: boolean | null;
  peers_present: number;
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
}

/**
 * The concise return delta, counts only and never bodies, in one statement. Two kinds of count:
 * states, true now whatever the cursor (law changed, unread mail, locker bags, peers present), and
 * news since the cursor (room replies, lantern matches). No count reads more than one citizen's
 * own rows or the news since the cursor:
 * - unread mail is the recipient's row in inbox_counts, kept by triggers on messages (0019);
 * - peers present is the kept house count (census_counts, 0014) less the beds whose citizen was
 *   not seen within the presence window (read index-only from citizens_house_seen: those rows are
 *   the ones nobody writes to) and less the caller itself;
 * - lantern matches read at most LANTERN_SCAN_POSTS posts, and only when the caller has a lantern.
 */
export async function returnDelta(db: Database, did: string, since: Date, wakeOn: readonly WakeCondition[], now: Date): Promise<ReturnDelta> {
  const row = rowsOf<DeltaRow>(await db.execute(returnDeltaQuery(did, since, now)))[0]!;
  return deltaOf(row, since, wakeOn);
}

/** The delta of a row selected with returnDeltaColumns (and the checkpoint lateral, `cp`). */
export function deltaOf(row: DeltaRow, since: Date, wakeOn: readonly WakeCondition[]): ReturnDelta {
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
    wake: WAKE_ON.filter((c) => wakeOn.includes(c) && met[c]),
  };
}

/** The delta's one statement (exported for the plan check in scripts/bench-explain.ts). */
export function returnDeltaQuery(did: string, since: Date, now: Date): SQL {
  return sql`SELECT ${returnDeltaColumns(did, sql`${since.toISOString()}::timestamptz`, now)} FROM (SELECT 1) AS one ${checkpointLateral(did)}`;
}

/**
 * The delta's columns, counted from `from` (a timestamptz expression: a parameter, or a column
 * of the statement they are part of, such as the poll's in lib/city/live.ts), with the latest
 * checkpoint's from checkpointLateral joined as `cp`.
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
      (SELECT count(*) FROM posts r
        WHERE r.created_at > ${from} AND r.board = 'room' AND r.did <> ${did}
          AND EXISTS (SELECT 1 FROM posts parent WHERE parent.id = r.reply_to AND parent.did = ${did})) AS room_replies,
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
      (SELECT house FROM census_counts WHERE id)
        - (SELECT count(*) FROM citizens s WHERE s.residency_status = 'bound' AND s.bed_id IS NOT NULL AND s.last_seen_at <= (SELECT ${presentSince}::timestamptz))
        - (SELECT count(*) FROM citizens s WHERE s.residency_status = 'bound' AND s.bed_id IS NOT NULL AND s.last_seen_at IS NULL)
        - (SELECT count(*) FROM citizens s WHERE s.did = ${did} AND s.residency_status = 'bound' AND s.bed_id IS NOT NULL AND s.last_seen_at > ${presentSince}::timestamptz)
        AS peers_present,
      cp.version AS cp_version, cp.sha256 AS cp_sha256, cp.bytes AS cp_bytes, cp.created_at AS cp_created_at, cp.verified AS cp_verified`;
}

/** The latest checkpoint of `did` as `cp`, for returnDeltaColumns. */
export function checkpointLateral(did: string): SQL {
  return sql`
    LEFT JOIN LATERAL (
      SELECT c.version, c.sha256, c.bytes, c.created_at, c.sha256 = encode(sha256(convert_to(c.content, 'UTF8')), 'hex') AS verified
      FROM checkpoints c WHERE c.did = ${did} ORDER BY c.version DESC LIMIT 1
    ) cp ON true`;
}
