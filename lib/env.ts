import { z } from "zod";
import { RetiredKeysVariable, SigningKeyVariable } from "@/lib/env-keys";
import { LOCKER_BYTES_CITY_WIDE } from "@/lib/spec-limits";
import {
  CITY_STORES,
  STORE_NEWCOMER_PERCENT,
  STORE_NEWCOMER_SUBJECT_PERCENT,
  STORE_NEWCOMER_NETWORK_PERCENT,
  STORE_NETWORK_PERCENT,
  STORE_RESERVE_PERCENT,
  STORE_SUBJECT_PERCENT,
  STORE_SUBJECT_TOTAL_PERMILLE,
  type StoreEnvPart,
} from "@/lib/store-limits";

/** Every environment variable the city reads, parsed once, with a clear message for a bad value. */
const EnvSchema = z.object({
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// connection string")
    .optional(),
  // Which driver reaches DATABASE_URL; unset: Neon's for a Neon host (or with CITY_NEON_WS_PROXY), else pg.
  CITY_DB_DRIVER: z.enum(["neon", "pg"]).optional(),
  // "0": the poll's statement goes unnamed, as every other (for a pooler without protocol-level prepared statements).
  CITY_PREPARED_STATEMENTS: z.enum(["0", "1"]).default("1"),
  // Benchmark only: count database round trips and report them in the X-City-Queries header.
  CITY_COUNT_QUERIES: z.enum(["0", "1"]).optional(),
  CITY_DATA_DIR: z.string().min(1).default(".city-data"),
  CITY_BASE_URL: z
    .url({ message: "must be an absolute http(s) URL such as https://city.example" })
    // The address the servers listen on (npm run dev and npm start both bind 127.0.0.1:3000).
    .default("http://127.0.0.1:3000")
    .transform((url) => url.replace(/\/+$/, "")),
  CITY_CONTACT: z.string().trim().min(1).optional(),
  CITY_GATE_PER_ADDRESS_PER_HOUR: z.coerce.number().int().min(0).default(30),
  CITY_GATE_PER_ORIGIN_PER_HOUR: z.coerce.number().int().min(1).default(20),
  // City-wide new admissions and ward requests per hour at the gate; 0 turns the ceiling off.
  CITY_GATE_ADMISSIONS_PER_HOUR: z.coerce.number().int().min(0).default(600),
  // City-wide: at most this many rows of the gate's per-source and per-origin windows kept at once;
  // past it a new subject is counted in a hashed overflow bucket, never refused for it.
  CITY_GATE_SUBJECTS_MAX: z.coerce.number().int().min(1).default(20000),
  // Presentations and GET /gate nonces per source network (an IPv4 /24, an IPv6 /48) per hour; 0 turns it off.
  CITY_GATE_PER_PREFIX_PER_HOUR: z.coerce.number().int().min(0).default(120),
  // The share (percent) of the hour's admissions one /24 or /48 may take, and one IPv6 /64 inside its /48.
  CITY_GATE_PREFIX_SHARE_PERCENT: z.coerce.number().int().min(1).max(100).default(5),
  CITY_GATE_HOST_SHARE_PERCENT: z.coerce.number().int().min(1).max(100).default(1),
  // The part (percent) of the hour's admissions that presentations without a proven key cannot reach: at least a fifth.
  CITY_GATE_RESERVE_PERCENT: z.coerce.number().int().min(20).max(100).default(20),
  // How many proxies in front of the city append to X-Forwarded-For, or "vercel" for Vercel's own
  // header; unset: "vercel" on Vercel (env VERCEL=1), else 0: addresses unknown, per-address limits off.
  CITY_TRUSTED_PROXIES: z.union([z.literal("vercel"), z.coerce.number().int().min(0).max(16)]).optional(),
  VERCEL: z.string().optional(),
  // Test only (CI's deploy check): the Neon driver's WebSocket goes to this local relay instead of
  // Neon's proxy, e.g. 127.0.0.1:8787/v1?address={host}:{port}. Never set it in production.
  CITY_NEON_WS_PROXY: z.string().min(1).optional(),
  // Set by Vercel: the deployment's own hostnames, accepted by the MCP door's DNS-rebinding guard.
  VERCEL_URL: z.string().optional(),
  VERCEL_BRANCH_URL: z.string().optional(),
  VERCEL_PROJECT_PRODUCTION_URL: z.string().optional(),
  CITY_OPERATOR_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  // Witnesses of the residency log (C2SP tlog-witness): "<vkey> <submission URL>" entries, comma-separated.
  CITY_LOG_WITNESSES: z.string().optional(),
  // The residency log's origin (C2SP checkpoint origin and key name); unset: "<host of CITY_BASE_URL>/residency-log".
  // Set it to keep a log's origin when the public address moves (npm run log-identity -- --adopt prints it).
  CITY_LOG_ORIGIN: z
    .string()
    .trim()
    .regex(/^[\x21-\x2a\x2c-\x7e]{1,200}$/, "must be printable ASCII without spaces or '+' (a C2SP key name), such as city.example/residency-log")
    .optional(),
  // The identity log's origin (CITY-KEYS/1, docs/keys.md); unset: "<host of CITY_BASE_URL>/identity-log". Same rules as CITY_LOG_ORIGIN.
  CITY_IDENTITY_LOG_ORIGIN: z
    .string()
    .trim()
    .regex(/^[\x21-\x2a\x2c-\x7e]{1,200}$/, "must be printable ASCII without spaces or '+' (a C2SP key name), such as city.example/identity-log")
    .optional(),
  // The locker's city-wide byte bound: a deployment may lower the spec's bound, never raise it.
  CITY_LOCKER_CITY_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(LOCKER_BYTES_CITY_WIDE, `may lower the spec's city-wide locker bound (${LOCKER_BYTES_CITY_WIDE} bytes) but never raise it`)
    .default(LOCKER_BYTES_CITY_WIDE),
  // The city's Ed25519 signing key (a private JWK as JSON, or PKCS#8 PEM); unset: one kept in the database.
  CITY_SIGNING_KEY: SigningKeyVariable.optional(),
  // Public keys still published in /.well-known/jwks.json after a rotation: a JWK Set or an array of JWKs, as JSON.
  CITY_SIGNING_KEYS_RETIRED: RetiredKeysVariable.optional(),
  // Unsigned ward filings (distress or a note) per client address per hour; 0 turns the bound off.
  CITY_WARD_PER_ADDRESS_PER_HOUR: z.coerce.number().int().min(0).default(10),
  // Unsigned ward filings city-wide per hour, whatever their addresses; 0 turns the ceiling off.
  CITY_WARD_UNSIGNED_PER_HOUR: z.coerce.number().int().min(0).default(120),
  // Anonymous recovery holds (CITY-KEYS/1) per client address per day; 0 turns the bound off.
  CITY_RECOVER_HOLDS_PER_ADDRESS_PER_DAY: z.coerce.number().int().min(0).default(4),
  // Anonymous recovery holds per source per hour: a source prefix (IPv4 /24, IPv6 /48) or the
  // citizen whose credential came with the hold; 0 turns the bound off. No city-wide pool (issue 43).
  CITY_RECOVER_HOLDS_PER_SOURCE_PER_HOUR: z.coerce.number().int().min(0).default(6),
  // CITY-ORIGIN/1 (docs/origin-proofs.md): the DNS servers the city asks, "host:port" entries
  // (an IPv6 address in brackets: [2001:db8::53]:53), comma-separated; unset: the system's.
  CITY_DNS_SERVERS: z
    .string()
    .trim()
    .regex(
      /^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]):\d{1,5}(\s*,\s*(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]):\d{1,5})*$/,
      "must be host:port entries of IP addresses, comma-separated, such as 127.0.0.1:5353,[::1]:53",
    )
    .optional(),
  // Local development and tests only: "1" lets origin proofs use http://, loopback addresses and a
  // host:port domain. Published in /api/capabilities while on; never on by default.
  CITY_ORIGIN_PROOF_INSECURE: z.enum(["0", "1"]).default("0"),
  // City-wide origin proof attempts per hour (each may cost the city a DNS query and a fetch), whoever asks.
  CITY_ORIGIN_PROOFS_PER_HOUR: z.coerce.number().int().min(1).default(300),
  CITY_ORIGIN_SOURCE_SHARE_PERCENT: z.coerce.number().int().min(1).max(100).default(10),
  // How long a shared cache (a CDN, a reverse proxy) may serve a public reading (s-maxage), and then
  // serve it stale while it asks again (stale-while-revalidate): a write shows within their sum. 0 and 0: no-store.
  CITY_SHARED_CACHE_SECONDS: z.coerce.number().int().min(0).max(3600).default(5),
  CITY_SHARED_CACHE_STALE_SECONDS: z.coerce.number().int().min(0).max(3600).default(5),
  ...clinicShape(),
  ...storeShape(),
  // Of each store's hourly bound, the share (percent) newcomers (admitted < 86400 s ago) may use
  // together; at most 100 less the reserve (issue 43: a fifth stays out of newcomers' reach).
  CITY_STORE_NEWCOMER_PERCENT: z.coerce
    .number()
    .int()
    .min(0)
    .max(100 - STORE_RESERVE_PERCENT, `at most ${100 - STORE_RESERVE_PERCENT}: ${STORE_RESERVE_PERCENT}% of each bound is kept for settled citizens`)
    .default(STORE_NEWCOMER_PERCENT),
  // Shares per subject (lib/city/bounds/store-shares.ts): one newcomer's (or one visitor source's) share of
  // the newcomers' hour, in percent; a settled citizen's share of the whole hour per day in the city
  // (up to STORE_STANDING_DAYS days), in percent; a citizen's own total in each append-only store,
  // per mille of the store's total.
  CITY_STORE_NEWCOMER_SUBJECT_PERCENT: z.coerce.number().int().min(1).max(100).default(STORE_NEWCOMER_SUBJECT_PERCENT),
  // The newcomers of one admission network (IPv4 /24, IPv6 /48) together, in percent of the newcomers' hour.
  CITY_STORE_NEWCOMER_NETWORK_PERCENT: z.coerce.number().int().min(1).max(100).default(STORE_NEWCOMER_NETWORK_PERCENT),
  // The citizens of one admission network together, newcomers and settled, in percent of the hour.
  CITY_STORE_NETWORK_PERCENT: z.coerce.number().int().min(1).max(100).default(STORE_NETWORK_PERCENT),
  CITY_STORE_SUBJECT_PERCENT: z.coerce.number().int().min(1).max(100).default(STORE_SUBJECT_PERCENT),
  CITY_STORE_SUBJECT_TOTAL_PERMILLE: z.coerce.number().int().min(1).max(1000).default(STORE_SUBJECT_TOTAL_PERMILLE),
});

const PHYSICIAN_NAMES = ["ASCLEPIUS", "HYGIEIA"] as const;

/** The clinic's variables: per physician a base URL, key, model and wire protocol; a timeout and an output bound. */
function clinicShape() {
  const baseUrl = z.url({ message: "must be an absolute http(s) URL such as https://api.openai.com/v1" }).optional();
  const word = z.string().min(1).optional();
  const protocol = z.enum(["openai-chat", "anthropic-messages"]).default("openai-chat");
  return {
    CLINIC_ASCLEPIUS_BASE_URL: baseUrl,
    CLINIC_ASCLEPIUS_API_KEY: word,
    CLINIC_ASCLEPIUS_MODEL: word,
    CLINIC_ASCLEPIUS_PROTOCOL: protocol,
    CLINIC_HYGIEIA_BASE_URL: baseUrl,
    CLINIC_HYGIEIA_API_KEY: word,
    CLINIC_HYGIEIA_MODEL: word,
    CLINIC_HYGIEIA_PROTOCOL: protocol,
    CLINIC_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(30_000),
    CLINIC_MAX_OUTPUT_TOKENS: z.coerce.number().int().min(16).max(8192).default(600),
  };
}

type StoreBoundVariable = ReturnType<typeof storeBoundVariable>;
function storeBoundVariable(bytes: number) {
  return z.coerce.number().int().min(0).default(bytes);
}

/**
 * The city-wide store bounds, two per store of lib/store-limits.ts: bytes in
 * total (CITY_STORE_<STORE>_BYTES) and bytes added per clock hour (CITY_STORE_<STORE>_BYTES_PER_HOUR).
 * 0 is a real bound (the store takes nothing more), never "off".
 */
function storeShape() {
  const shape: Record<string, StoreBoundVariable> = {};
  for (const store of Object.values(CITY_STORES)) {
    shape[`CITY_STORE_${store.env}_BYTES`] = storeBoundVariable(store.bytes);
    shape[`CITY_STORE_${store.env}_BYTES_PER_HOUR`] = storeBoundVariable(store.perHour);
  }
  return shape as { [K in StoreEnvPart as `CITY_STORE_${K}_BYTES` | `CITY_STORE_${K}_BYTES_PER_HOUR`]: StoreBoundVariable };
}

export type Env = z.infer<typeof EnvSchema>;

/** The name of every variable the city reads here (docs/configuration.md lists each). */
export const ENV_VARIABLES: readonly string[] = Object.keys(EnvSchema.shape);

export class EnvError extends Error {
  override name = "EnvError";
}

export function parseEnv(source: Record<string, string | undefined>): Env {
  // An empty variable means "unset", as in most deployment dashboards.
  const present = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = EnvSchema.superRefine(halfConfiguredPhysicians).safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new EnvError(`Invalid environment configuration:\n${lines.join("\n")}`);
  }
  return parsed.data;
}

/** A physician is configured by its base URL and model together; one without the other is a mistake. */
function halfConfiguredPhysicians(e: Env, ctx: z.RefinementCtx): void {
  for (const name of PHYSICIAN_NAMES) {
    const base = e[`CLINIC_${name}_BASE_URL`];
    const model = e[`CLINIC_${name}_MODEL`];
    if ((base || e[`CLINIC_${name}_API_KEY`]) && !(base && model)) {
      ctx.addIssue({
        code: "custom",
        path: [base ? `CLINIC_${name}_MODEL` : `CLINIC_${name}_BASE_URL`],
        message: `a physician needs CLINIC_${name}_BASE_URL and CLINIC_${name}_MODEL together`,
      });
    }
  }
}

let cached: Env | undefined;

export function env(): Env {
  cached ??= parseEnv(process.env);
  return cached;
}

/** Forgets the parsed environment, so the next env() reads process.env again (tests that play another instance's configuration). */
export function forgetEnv(): void {
  cached = undefined;
}
