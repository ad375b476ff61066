/**
 * The share of a database's active backends that wait on a Lock, sampled from pg_stat_activity
 * while a load runs (the contention legs, scripts/bench-contention.ts). A connection of its own
 * (to the server's maintenance database, so it is never one of the backends it counts) reads every
 * `everyMs`: the client backends of `database` whose state is 'active', and of those the ones whose
 * wait_event_type is 'Lock' (a heavyweight lock: a row, a transaction, a tuple, a relation; not an
 * LWLock nor I/O). A backend waiting for another caller's row lock shows as Lock/transactionid
 * or Lock/tuple. A sample with no active backend says nothing and is left out.
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
}

export const LOCK_SAMPLE_SQL = `SELECT count(*) FILTER (WHERE state = 'active')::int AS active,
  count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Lock')::int AS waiting
  FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()`;

/** The share of a set of samples (the pure part of the sampler). */
export function lockShareOf(samples: readonly LockSample[]): LockShare {
  const busy = samples.filter((s) => s.active > 0);
  const share = busy.length ? busy.reduce((sum, s) => sum + s.waiting / s.active, 0) / busy.length : null;
  const meanActive = samples.length ? samples.reduce((sum, s) => sum + s.active, 0) / samples.length : 0;
  return { samples: busy.length, share, meanActive };
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
  const read = async (): Promise<LockSample> => {
    const { rows } = await client.query<LockSample>(LOCK_SAMPLE_SQL, [database]);
    return { active: Number(rows[0]!.active), waiting: Number(rows[0]!.waiting) };
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
      samples = [await read()];
      on = true;
      running = loop();
    },
    stop: async () => {
      on = false;
      await running;
      running = null;
      return lockShareOf(samples);
    },
    close: async () => {
      on = false;
      await running;
      await client.end();
    },
  };
}
