import { z } from "zod";
import { LOCKER_BYTES_CITY_WIDE } from "@/lib/spec-limits";

/** Every environment variable the city reads, parsed once, with a clear message for a bad value. */
const EnvSchema = z.object({
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// connection string")
    .optional(),
  // Which driver reaches DATABASE_URL; unset: Neon's for a Neon host (or with CITY_NEON_WS_PROXY), else pg.
  CITY_DB_DRIVER: z.enum(["neon", "pg"]).optional(),
  // Benchmark only: count database round trips and report them in the X-City-Queries header.
  CITY_COUNT_QUERIES: z.enum(["0", "1"]).optional(),
  CITY_DATA_DIR: z.string().min(1).default(".city-data"),
  CITY_BASE_URL: z
    .url({ message: "must be an absolute http(s) URL such as https://city.example" })
    .default("http://localhost:3000")
    .transform((url) => url.replace(/\/+$/, "")),
  CITY_CONTACT: z.string().trim().min(1).optional(),
  CITY_GATE_PER_ADDRESS_PER_HOUR: z.coerce.number().int().min(0).default(30),
  CITY_GATE_PER_ORIGIN_PER_HOUR: z.coerce.number().int().min(1).default(20),
  // City-wide new admissions and ward requests per hour at the gate; 0 turns the ceiling off.
  CITY_GATE_ADMISSIONS_PER_HOUR: z.coerce.number().int().min(0).default(600),
  // How many proxies in front of the city append to X-Forwarded-For, or "vercel" for Vercel's own
  // header; unset: "vercel" on Vercel (env VERCEL=1), else 1. 0 ignores forwarded headers.
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
  // The locker's city-wide byte bound: a deployment may lower the spec's bound, never raise it.
  CITY_LOCKER_CITY_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(LOCKER_BYTES_CITY_WIDE, `may lower the spec's city-wide locker bound (${LOCKER_BYTES_CITY_WIDE} bytes) but never raise it`)
    .default(LOCKER_BYTES_CITY_WIDE),
  // The city's Ed25519 signing key (a private JWK as JSON, or PKCS#8 PEM); unset: one kept in the database.
  CITY_SIGNING_KEY: z.string().trim().min(1).optional(),
  // Public keys still published in /.well-known/jwks.json after a rotation: a JWK Set or an array of JWKs, as JSON.
  CITY_SIGNING_KEYS_RETIRED: z.string().trim().min(1).optional(),
});

export type Env = z.infer<typeof EnvSchema>;

export class EnvError extends Error {
  override name = "EnvError";
}

export function parseEnv(source: Record<string, string | undefined>): Env {
  // An empty variable means "unset", as in most deployment dashboards.
  const present = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = EnvSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new EnvError(`Invalid environment configuration:\n${lines.join("\n")}`);
  }
  return parsed.data;
}

let cached: Env | undefined;

export function env(): Env {
  cached ??= parseEnv(process.env);
  return cached;
}
