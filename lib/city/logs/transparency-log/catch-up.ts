import { and, asc, desc, gt, lte } from "drizzle-orm";
import type { Database } from "@/db/client";
import { checkpointOf, edgeOf, growTree } from "@/lib/tlog/append";
import type { LogDescriptor } from "./descriptor";
import { leafDataOf, publishLogRow } from "./row";
import type { LogSigner } from "./signer";

/**
 * Builds the tree over rows that have none yet (the rows written before the tree existed), one
 * page at a time, and signs a checkpoint at `upto`. Runs under the head's lock (the integrator's,
 * ./integrate.ts). Returns the edge at `upto`.
 */
export async function catchUpTree(log: LogDescriptor, db: Database, signer: LogSigner, upto: number, now: Date): Promise<string> {
  const { rows: table, nodes: logNodes, checkpoints: logCheckpoints } = log.tables;
  const [kept] = await db
    .select({ size: logCheckpoints.size, edge: logCheckpoints.edge })
    .from(logCheckpoints)
    .where(lte(logCheckpoints.size, upto))
    .orderBy(desc(logCheckpoints.size))
    .limit(1);
  let size = kept?.size ?? 0;
  let edge = edgeOf(kept?.edge ?? "");
  if (size === upto) return kept!.edge;
  while (size < upto) {
    const rows = await db
      .select()
      .from(table)
      .where(and(gt(table.seq, size), lte(table.seq, upto)))
      .orderBy(asc(table.seq))
      .limit(1000);
    // Leaf i of the page is row size + 1 + i: a missing row stops the catch-up (the page's first, as before, or any later one).
    const gap = rows.length === 0 ? 0 : rows.findIndex((row, i) => row.seq !== size + 1 + i);
    if (gap >= 0) throw new Error(`the ${log.name} has no row ${size + 1 + gap}`);
    const grown = growTree(
      edge,
      size,
      rows.map((row) => leafDataOf(publishLogRow(row))),
    );
    edge = grown.edge;
    size = rows.at(-1)!.seq;
    await db.insert(logNodes).values(grown.nodes).onConflictDoNothing();
  }
  const checkpoint = checkpointOf(edge, upto, signer);
  await db
    .insert(logCheckpoints)
    .values({ ...checkpoint, signedAt: now })
    .onConflictDoNothing();
  return checkpoint.edge;
}
