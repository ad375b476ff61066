import { and, asc, desc, eq, gt, lte, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { logCheckpoints, logNodes, residencyLog } from "@/db/schema";
import { unhex } from "@/lib/tlog/append";
import type { LogStorage } from "@/lib/tlog/storage";
import { type Hash, type NodeId, nodeKey } from "@/lib/tlog/tree";
import { leafDataOf, publishLogRow } from "./row";

/** The residency log's tree as lib/tlog reads it: nodes in log_nodes, checkpoints in log_checkpoints, leaves from residency_log. */
export function residencyLogStorage(db: Database): LogStorage {
  return {
    async treeSize() {
      const [row] = await db.select({ size: logCheckpoints.size }).from(logCheckpoints).orderBy(desc(logCheckpoints.size)).limit(1);
      return row?.size ?? 0;
    },
    async readNodes(ids: readonly NodeId[]) {
      const map = new Map<string, Hash>();
      if (ids.length === 0) return map;
      const wanted = sql.join(
        ids.map((id) => sql`(${id.level}::smallint, ${id.index}::bigint)`),
        sql`, `,
      );
      const rows = await db
        .select()
        .from(logNodes)
        .where(sql`(${logNodes.level}, ${logNodes.idx}) IN (${wanted})`);
      for (const row of rows) map.set(nodeKey({ level: row.level, index: Number(row.idx) }), unhex(row.hash));
      return map;
    },
    async readLevel(level, first, count) {
      const rows = await db
        .select({ hash: logNodes.hash })
        .from(logNodes)
        .where(and(eq(logNodes.level, level), sql`${logNodes.idx} >= ${first}`, sql`${logNodes.idx} < ${first + count}`))
        .orderBy(asc(logNodes.idx));
      return rows.map((r) => unhex(r.hash));
    },
    async readLeaves(first, count) {
      const rows = await db
        .select()
        .from(residencyLog)
        .where(and(gt(residencyLog.seq, first), lte(residencyLog.seq, first + count)))
        .orderBy(asc(residencyLog.seq));
      return rows.map((row) => leafDataOf(publishLogRow(row)));
    },
    async heldNote(size) {
      const [held] = await db.select({ note: logCheckpoints.note }).from(logCheckpoints).where(eq(logCheckpoints.size, size));
      return held?.note ?? null;
    },
  };
}
