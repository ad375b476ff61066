import { and, asc, desc, eq, gt, lte, sql } from "drizzle-orm";
import type { Database } from "@/db/client";
import { unhex } from "@/lib/tlog/append";
import type { LogStorage } from "@/lib/tlog/storage";
import { type Hash, type NodeId, nodeKey } from "@/lib/tlog/tree";
import type { LogDescriptor } from "./descriptor";
import { leafDataOf, publishLogRow } from "./row";

/** A log's tree as lib/tlog reads it: nodes in its nodes table, checkpoints in its checkpoints table, leaves from its rows. */
export function logStorage(log: LogDescriptor, db: Database): LogStorage {
  const { rows: table, nodes: logNodes, checkpoints: logCheckpoints } = log.tables;
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
        .from(table)
        .where(and(gt(table.seq, first), lte(table.seq, first + count)))
        .orderBy(asc(table.seq));
      return rows.map((row) => leafDataOf(publishLogRow(row)));
    },
    async heldNote(size) {
      const [held] = await db.select({ note: logCheckpoints.note }).from(logCheckpoints).where(eq(logCheckpoints.size, size));
      return held?.note ?? null;
    },
  };
}
