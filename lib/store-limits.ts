/**
 * The city-wide store bounds' table: every store that citizens or visitors add
 * to, with its default bounds. A leaf module, like lib/spec-limits.ts: the environment (lib/env.ts)
 * reads its variable names and defaults, the domain (lib/city/store-bounds.ts) its names.
 * The spec sets none of these; its per-citizen numbers are untouched by them.
 */
const MiB = 1_048_576;
const GiB = 1_073_741_824;

/** Each store: its name (the city_stores row), the env name's part, and its default bounds. */
export const CITY_STORES = {
  vault: { env: "VAULT", bytes: GiB, perHour: 32 * MiB, what: "vault notes (and their content)" },
  mail: { env: "MAIL", bytes: GiB, perHour: 32 * MiB, what: "mail bodies" },
  posts: { env: "POSTS", bytes: GiB, perHour: 32 * MiB, what: "posts on the bazaar, the plaza and in rooms" },
  quarantine: { env: "QUARANTINE", bytes: 512 * MiB, perHour: 16 * MiB, what: "parked writes (their payload as stored, jsonb)" },
  checkpoints: { env: "CHECKPOINTS", bytes: GiB, perHour: 32 * MiB, what: "checkpoint versions (content and label)" },
  seals: { env: "SEALS", bytes: 64 * MiB, perHour: 2 * MiB, what: "memory seals (the sha256)" },
  lanterns: { env: "LANTERNS", bytes: 16 * MiB, perHour: MiB, what: "lanterns (the keyword); putting one out frees its bytes" },
  ward: { env: "WARD", bytes: 256 * MiB, perHour: 8 * MiB, what: "ward notes and sealed ward requests (state, note, claimed name)" },
  a2a_tasks: { env: "A2A_TASKS", bytes: 512 * MiB, perHour: 32 * MiB, what: "kept A2A tasks (their jsonb as stored); a swept or removed task frees its bytes" },
  appeals: { env: "APPEALS", bytes: 16 * MiB, perHour: MiB, what: "appeal reasons" },
  identity_log: {
    env: "IDENTITY_LOG",
    // No total by default: an append-only log a flood could fill for good would shut every owner's
    // commitment out for good. Its growth is bounded per hour here, and per citizen and credential.
    bytes: Number.MAX_SAFE_INTEGER,
    perHour: 8 * MiB,
    what: "identity log rows of key events asked with a citizen's secret or a recovery code (each counted as 2,048 bytes: its facts, tree nodes and checkpoint); append-only, so bounded per hour, with no total unless set",
  },
} as const;

export type StoreName = keyof typeof CITY_STORES;
export const STORE_NAMES = Object.keys(CITY_STORES) as StoreName[];

/** Default share of each hourly bound that newcomers together may use, in percent. */
export const STORE_NEWCOMER_PERCENT = 25;

/**
 * Rows each store's counters are split over (city_store_stripes, migration 0044 makes this many):
 * writers of different citizens charge different rows, so up to this many writes of one store can
 * be in flight without one waiting for another. The bounds stay exact (no slack).
 */
export const STORE_STRIPES = 64;

/** Every stored row also counts this many bytes (its ids, times, DIDs), so an empty write still takes room. */
export const STORE_ROW_BYTES = 64;

export type StoreEnvPart = (typeof CITY_STORES)[StoreName]["env"];
export const storeBytesVariable = <P extends StoreEnvPart>(p: P) => `CITY_STORE_${p}_BYTES` as const;
export const storePerHourVariable = <P extends StoreEnvPart>(p: P) => `CITY_STORE_${p}_BYTES_PER_HOUR` as const;
