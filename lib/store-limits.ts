/**
 * The city-wide store bounds' table: every store that citizens or visitors add
 * to, with its default bounds. A leaf module, like lib/spec-limits.ts: the environment (lib/env.ts)
 * reads its variable names and defaults, the domain (lib/city/bounds/store-bounds.ts) its names.
 * The spec sets none of these; its per-citizen numbers are untouched by them.
 */
const MiB = 1_048_576;
const GiB = 1_073_741_824;

/**
 * Each store: its name (the city_stores row), the env name's part, its default bounds, and whether a
 * citizen has a total of its own there (issue 43, item 2: append-only stores that nothing frees).
 * Checkpoints have none here: the spec's 12 versions of at most 32768 bytes are already a total per
 * citizen; lanterns (16 per citizen) and A2A tasks free their bytes; the identity log is bounded
 * per citizen and credential where its events are counted.
 */
export const CITY_STORES = {
  vault: { env: "VAULT", subjectTotal: true, bytes: GiB, perHour: 32 * MiB, what: "vault notes (and their content)" },
  mail: { env: "MAIL", subjectTotal: true, bytes: GiB, perHour: 32 * MiB, what: "mail bodies" },
  posts: { env: "POSTS", subjectTotal: true, bytes: GiB, perHour: 32 * MiB, what: "posts on the bazaar, the plaza and in rooms" },
  quarantine: { env: "QUARANTINE", subjectTotal: true, bytes: 512 * MiB, perHour: 16 * MiB, what: "parked writes (their payload as stored, jsonb)" },
  checkpoints: { env: "CHECKPOINTS", subjectTotal: false, bytes: GiB, perHour: 32 * MiB, what: "checkpoint versions (content and label)" },
  seals: { env: "SEALS", subjectTotal: true, bytes: 64 * MiB, perHour: 2 * MiB, what: "memory seals (the sha256)" },
  lanterns: { env: "LANTERNS", subjectTotal: false, bytes: 16 * MiB, perHour: MiB, what: "lanterns (the keyword); putting one out frees its bytes" },
  ward: { env: "WARD", subjectTotal: true, bytes: 256 * MiB, perHour: 8 * MiB, what: "ward notes and sealed ward requests (state, note, claimed name)" },
  a2a_tasks: {
    env: "A2A_TASKS",
    subjectTotal: false,
    bytes: 512 * MiB,
    perHour: 32 * MiB,
    what: "kept A2A tasks (their jsonb as stored); a swept or removed task frees its bytes",
  },
  appeals: { env: "APPEALS", subjectTotal: true, bytes: 16 * MiB, perHour: MiB, what: "appeal reasons" },
  identity_log: {
    env: "IDENTITY_LOG",
    subjectTotal: false,
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
 * The reserve (issue 43, item 4): of each store's total and of its hour, at least this percent is
 * out of reach of newcomers and visitors; settled citizens keep it.
 */
export const STORE_RESERVE_PERCENT = 20;

/** Default share of the newcomers' hour that one newcomer (or one visitor source) may take, in percent. */
export const STORE_NEWCOMER_SUBJECT_PERCENT = 5;

/**
 * Default share of the newcomers' hour that the newcomers of one network (the IPv4 /24 or IPv6 /48
 * each was admitted from) may take together, in percent: one network's admissions never fill it.
 */
export const STORE_NEWCOMER_NETWORK_PERCENT = 20;

/**
 * Default share of a store's hour that the citizens admitted from one network (newcomers and settled
 * alike) may take together, in percent: one network's citizens never fill an hour, whatever their
 * standing. At the defaults above a settled citizen's share at full standing (4 days of 2 %), so a
 * network's one citizen never meets it alone.
 */
export const STORE_NETWORK_PERCENT = 10;

/**
 * Stores charged to no network: the identity log (a recovery by code or a secret's key event must
 * not be refused because other citizens of the owner's network filled their part).
 */
export const STORES_WITHOUT_NETWORK_SHARE: readonly StoreName[] = ["identity_log"];

/** Default share of a store's hour that a settled citizen may take per day in the city, in percent. */
export const STORE_SUBJECT_PERCENT = 2;

/** Days of standing a settled citizen's share grows with: its share is its days in the city (at most this) times the percent. */
export const STORE_STANDING_DAYS = 4;

/** Default total of one citizen in each append-only store, per mille of the store's total. */
export const STORE_SUBJECT_TOTAL_PERMILLE = 1;

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
