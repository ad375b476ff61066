/**
 * The share of a database's active backends that wait on a Lock, sampled from pg_stat_activity
 * while a load runs (the contention legs, scripts/bench-contention.ts). A connection of its own
 * (to the server's maintenance database, so it is never one of the backends it counts) reads every
 * `everyMs`: the client backends of `database` whose state is 'active', and of those the ones whose
 * wait_event_type is 'Lock' (a heavyweight lock: a row, a transaction, a tuple, a relation; not an
 * LWLock nor I/O). A backend waiting for another caller's row lock shows as Lock/transactionid
 * or Lock/tuple. A sample with no active backend says nothing and is left out. A sample with a
 * waiting backend also reads what it waits for: its lock's kind, the head of its statement and of
 * the statement its blocker ran last (pg_blocking_pids), so a share above nothing names its row.
 */
import pg from "pg";

export interface LockSample {
  active: number;
  waiting: number;
}

export interface LockShare {
  /** Samples with at least one active backend. */
  samples: number;
  /** The mean over those samples of waiting / active (0 to 1); null with no such sample. */
  share: number | null;
  /** The mean number of active backends over every sample. */
  meanActive: number;
  /** The three waits most seen (none when no backend waited). */
  waits: LockWaitCount[];
}

export const LOCK_SAMPLE_SQL = `SELECT count(*) FILTER (WHERE state = 'active')::int AS active,
  count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Lock')::int AS waiting
  FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()`;

/** One waiting backend as a sample saw it: its lock's kind, its statement's head, its blocker's. */
export interface LockWait {
  lock: string;
  waiting: string;
  blocker: string;
}

/** A kind of wait and how many times the samples saw it. */
export interface LockWaitCount extends LockWait {
  seen: number;
}

/** The waits of a leg's samples, the most seen first (statements cut to their first 100 characters). */
export const LOCK_WAITS_SQL = `SELECT w.wait_event AS lock,
  left(regexp_replace(w.query, '\\s+', ' ', 'g'), 100) AS waiting,
  b.state || ': ' || left(regexp_replace(b.query, '\\s+', ' ', 'g'), 100) AS blocker
  FROM pg_stat_activity w CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS blocking(pid)
  JOIN pg_stat_activity b ON b.pid = blocking.pid
  WHERE w.datname = $1 AND w.state = 'active' AND w.wait_event_type = 'Lock' AND w.pid <> pg_backend_pid()`;

/** The share of a set of samples (the pure part of the sampler), and the waits most seen in them. */
export function lockShareOf(samples: readonly LockSample[], waits: readonly LockWait[] = []): LockShare {
  const busy = samples.filter((s) => s.active > 0);
  const share = busy.length ? busy.reduce((sum, s) => sum + s.waiting / s.active, 0) / busy.length : null;
  const meanActive = samples.length ? samples.reduce((sum, s) => sum + s.active, 0) / samples.length : 0;
  const counted = new Map<string, LockWaitCount>();
  for (const wait of waits) {
    const key = JSON.stringify([wait.lock, wait.waiting, wait.blocker]);
    const seen = counted.get(key);
    if (seen) seen.seen += 1;
    else counted.set(key, { ...wait, seen: 1 });
  }
  const mostSeen = [...counted.values()].sort((a, b) => b.seen - a.seen).slice(0, 3);
  return { samples: busy.length, share, meanActive, waits: mostSeen };
}

export interface LockSampler {
  /** Starts collecting (samples taken before are dropped); resolves after the first read. */
  start: () => Promise<void>;
  /** Stops collecting and returns the share since `start`. */
  stop: () => Promise<LockShare>;
  close: () => Promise<void>;
}

/** A sampler of `database`'s backends, through `serverUrl` (any database of that server). */
export async function openLockSampler(serverUrl: string, database: string, everyMs = 50): Promise<LockSampler> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  let waits: LockWait[] = [];
  const read = async (): Promise<LockSample> => {
    const { rows } = await client.query<LockSample>(LOCK_SAMPLE_SQL, [database]);
    const sample = { active: Number(rows[0]!.active), waiting: Number(rows[0]!.waiting) };
    if (sample.waiting > 0) waits.push(...(await client.query<LockWait>(LOCK_WAITS_SQL, [database])).rows);
    return sample;
  };
  let samples: LockSample[] = [];
  let running: Promise<void> | null = null;
  let on = false;
  const loop = async () => {
    while (on) {
      const due = performance.now() + everyMs;
      samples.push(await read());
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  };
  return {
    start: async () => {
      waits = [];
      samples = [await read()];
      on = true;
      running = loop();
    },
    stop: async () => {
      on = false;
      await running;
      running = null;
      return lockShareOf(samples, waits);
    },
    close: async () => {
      on = false;
      await running;
      await client.end();
    },
  };
}
