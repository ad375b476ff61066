import { sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import type { DirectoryFilters } from "@/lib/city/directory";
import { searchKey } from "@/lib/city/directory";
import { searchStatement } from "@/lib/city/directory/directory-search";

type PlanOptions = Partial<DirectoryFilters> & { limit?: number; cursor?: string };

function statementOf(db: Database, q: string, options: PlanOptions) {
  const statement = searchStatement(db, { presentOnly: false, limit: 100, ...options, q });
  if (!statement) throw new Error(`no statement for ${JSON.stringify(q)}`);
  return statement.getSQL();
}

/** EXPLAIN of the statement a directory search runs (first page and default filters unless given), as one text. */
export async function searchPlanOf(db: Database, q: string, options: PlanOptions & { analyze?: boolean } = {}): Promise<string> {
  const explain = options.analyze ? sql`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ` : sql`EXPLAIN (COSTS OFF) `;
  const rows = rowsOf<Record<string, string>>(await db.execute(sql`${explain}${statementOf(db, q, options)}`));
  return rows.map((row) => Object.values(row)[0]).join("\n");
}

interface PlanNode {
  "Relation Name"?: string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  "Node Type"?: string;
  "Index Name"?: string;
  "Parent Relationship"?: string;
  "One-Time Filter"?: string;
  Filter?: string;
  "Recheck Cond"?: string;
  "Index Cond"?: string;
  "Workers Launched"?: number;
  "Shared Hit Blocks"?: number;
  "Shared Read Blocks"?: number;
  Plans?: PlanNode[];
}

export interface SearchReads {
  /** Rows of `citizens` the statement's scans produced or filtered away (what it read of the table). */
  rows: number;
  /** Shared buffers the statement touched (hit or read), planning excluded. */
  buffers: number;
  /** Parallel workers launched. */
  workers: number;
  /**
   * Plan nodes of the substring rank that ran (nodes whose scans all match by the substring
   * pattern; the gate's Result and its InitPlans aside): 0 when the rank started nothing.
   */
  substringNodesRun: number;
  /** The plan, as JSON text (for a failing test's message). */
  plan: string;
}

/**
 * What a search's statement reads when it runs, from EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON): a
 * measure of its cost that is the same on a busy machine as on a quiet one.
 */
export async function searchReadsOf(db: Database, q: string, options: PlanOptions = {}): Promise<SearchReads> {
  const [row] = rowsOf<Record<string, unknown>>(await db.execute(sql`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statementOf(db, q, options)}`));
  const value = Object.values(row!)[0];
  const [explained] = (typeof value === "string" ? JSON.parse(value) : value) as { Plan: PlanNode }[];
  const top = explained!.Plan;
  const inside = `~~ '%${searchKey(q).replace(/'/g, "''")}%'`;
  let rows = 0;
  let workers = 0;
  let substringNodesRun = 0;
  /** Visits a node; returns how many scans its subtree holds (InitPlans aside) and how many of them match by the substring pattern. */
  const visit = (node: PlanNode): { scans: number; substring: number } => {
    const loops = node["Actual Loops"] ?? 0;
    if (node["Relation Name"] === "citizens") {
      rows += ((node["Actual Rows"] ?? 0) + (node["Rows Removed by Filter"] ?? 0) + (node["Rows Removed by Index Recheck"] ?? 0)) * loops;
    }
    workers += node["Workers Launched"] ?? 0;
    // A CTE Scan reads another rank's rows: it is a scan, never of the substring rank.
    const scan = node["Relation Name"] !== undefined || node["Index Name"] !== undefined || node["Node Type"] === "CTE Scan";
    const text = [node.Filter, node["Recheck Cond"], node["Index Cond"]].join(" ");
    const seen = { scans: scan ? 1 : 0, substring: scan && text.includes(inside) ? 1 : 0 };
    for (const child of node.Plans ?? []) {
      const below = visit(child);
      if (child["Parent Relationship"] === "InitPlan" || child["Parent Relationship"] === "SubPlan") continue;
      seen.scans += below.scans;
      seen.substring += below.substring;
    }
    const substringOnly = seen.scans > 0 && seen.substring === seen.scans;
    if (substringOnly && loops > 0 && !node["One-Time Filter"]) substringNodesRun += 1;
    return seen;
  };
  visit(top);
  return {
    rows,
    buffers: (top["Shared Hit Blocks"] ?? 0) + (top["Shared Read Blocks"] ?? 0),
    workers,
    substringNodesRun,
    plan: JSON.stringify(top, null, 1),
  };
}
