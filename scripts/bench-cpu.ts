/**
 * CPU per request, read from /proc around a load run (Linux only): the server's process group
 * (`next start` and anything it forks) and the PostgreSQL backends connected to the bench's
 * database. CPU time is what a request costs whatever else runs on the machine, so it is far
 * steadier than requests a second on a shared host. PGlite runs inside the server process: its
 * database CPU is in the server's column.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import type pg from "pg";

const TICKS_PER_SECOND = (() => {
  const out = spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" });
  return Number(out.stdout?.trim()) || 100;
})();

export const cpuReadable = existsSync("/proc/self/stat");

/** utime + stime of a process in ms, and its process group; null when it is gone. */
function statOf(pid: number): { ms: number; pgrp: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: the fields after it start after the last ')'.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    // After the name: state(3) ppid(4) pgrp(5) ... utime(14) stime(15), so index = field - 3.
    return { ms: ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND, pgrp: Number(fields[2]) };
  } catch {
    return null;
  }
}

/** CPU ms of every process in the group `pgid` (the server was spawned detached: it leads its group). */
function groupCpuMs(pgid: number): number {
  let total = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = statOf(Number(entry));
    if (stat?.pgrp === pgid) total += stat.ms;
  }
  return total;
}

export interface CpuSources {
  /** The server's process group id (its pid: spawned detached). */
  serverGroup: number;
  /** The pids of the PostgreSQL backends serving the bench's database now (none on PGlite). */
  backends?: () => Promise<number[]>;
}

export interface CpuSnapshot {
  server: number;
  backends: Map<number, number> | null;
}

export async function readCpu(sources: CpuSources): Promise<CpuSnapshot | null> {
  if (!cpuReadable) return null;
  const server = groupCpuMs(sources.serverGroup);
  if (!sources.backends) return { server, backends: null };
  const backends = new Map<number, number>();
  for (const pid of await sources.backends()) backends.set(pid, statOf(pid)?.ms ?? 0);
  return { server, backends };
}

export interface CpuPerRequest {
  server: number;
  /** null on PGlite (in the server's process). */
  database: number | null;
}

/**
 * CPU ms per request between two snapshots. A backend that appeared meanwhile counts from zero;
 * one that ended meanwhile is lost (the pool keeps its connections while the load runs).
 */
export async function cpuSince(before: CpuSnapshot | null, sources: CpuSources, requests: number): Promise<CpuPerRequest | null> {
  return cpuBetween(before, await readCpu(sources), requests);
}

/** CPU ms per request between two snapshots taken with readCpu (see cpuSince). */
export function cpuBetween(before: CpuSnapshot | null, after: CpuSnapshot | null, requests: number): CpuPerRequest | null {
  if (!before || !after || requests <= 0) return null;
  let database: number | null = null;
  if (after.backends) {
    database = 0;
    for (const [pid, ms] of after.backends) database += ms - (before.backends?.get(pid) ?? 0);
  }
  return { server: (after.server - before.server) / requests, database: database === null ? null : database / requests };
}

/** The pids of the client backends connected to a database now, read over a connection to the server's own. */
export async function backendsOf(admin: pg.Client, database: string): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`, [database]);
  return rows.map((r) => Number(r.pid));
}
