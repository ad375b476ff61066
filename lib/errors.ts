import { z } from "zod";

/**
 * Every error code the city answers with, its HTTP status and its title: the one table.
 * Codes are stable snake_case; clients may branch on them.
 */
export const ERROR_CODES = {
  bad_request: { status: 400, title: "The request is not valid" },
  malformed_json: { status: 400, title: "The body is not valid JSON" },
  unauthorized: { status: 401, title: "Credentials are missing or not valid" },
  credential_conflict: { status: 400, title: "One credential per request: Authorization or a signature, not both" },
  signature_invalid: { status: 401, title: "The request signature is not valid (CITY-SIG/1, RFC 9421)" },
  signature_expired: { status: 401, title: "The request signature has expired or is not yet valid" },
  signature_replayed: { status: 401, title: "The request signature's nonce was already used" },
  unknown_key: { status: 401, title: "The key that signed the request opens no citizen" },
  forbidden: { status: 403, title: "This door is closed to the caller" },
  not_found: { status: 404, title: "Nothing is here" },
  method_not_allowed: { status: 405, title: "This door does not answer that method" },
  conflict: { status: 409, title: "The request conflicts with the city's state" },
  clinic_closed: { status: 409, title: "The clinic is closed: no physician is configured" },
  payload_too_large: { status: 413, title: "The body is larger than this door accepts" },
  unsupported_media_type: { status: 415, title: "The body must be application/json" },
  limit_reached: { status: 409, title: "A published limit is reached; nothing was evicted" },
  content_refused: { status: 422, title: "The content was refused and not stored" },
  proof_invalid: { status: 422, title: "The proof does not verify" },
  origin_unverified: { status: 422, title: "The origin could not be proven: what the city found is not what it expected" },
  rate_limited: { status: 429, title: "Over a published limit" },
  internal_error: { status: 500, title: "Something went wrong inside the city" },
  bad_gateway: { status: 502, title: "A provider outside the city failed to answer" },
  unavailable: { status: 503, title: "The city cannot answer this safely right now" },
  log_identity_mismatch: { status: 503, title: "This instance's log origin or key is not the one the database's log is kept under" },
  gateway_timeout: { status: 504, title: "A provider outside the city did not answer in time" },
  city_full: { status: 507, title: "The city is full; nobody was evicted" },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface LimitInfo {
  name: string;
  limit: number;
  window_seconds?: number;
  remaining?: number;
}

export interface CityErrorOptions {
  limit?: LimitInfo;
  retryAfterSeconds?: number;
  /** Field-level problems, for bad_request. */
  errors?: { path: string; message: string }[];
  /**
   * Commit what the transaction wrote before answering this error: a refusal that must still be
   * counted (a content refusal toward the restriction trigger) is the one case.
   */
  keepWrites?: boolean;
  /** Headers the answer carries beside the problem (Accept-Signature on a refused signature). */
  headers?: Record<string, string>;
  /** origin_unverified (CITY-ORIGIN/1): what the city looked at, what it found there (capped) and what it expected. */
  originCheck?: OriginCheck;
  /** describe-gate over its nonce quota: the gate's description all the same, without a nonce. */
  gateDescription?: Record<string, unknown>;
  /** describe-gate over its nonce quota: the proof-of-work effort suggested now (CITY-POW/1, docs/pow.md). */
  suggestedEffort?: number;
}

/** What an origin check looked at and found, in a problem answer (CITY-ORIGIN/1). */
export interface OriginCheck {
  method: "https" | "dns";
  domain: string | null;
  looked_at: string | null;
  address: string | null;
  found: { status?: number; content_type?: string | null; bytes?: number; lines?: string[]; records?: string[]; problem?: string };
  expected: string;
}

/** The one error class. Domain modules throw it; the door adapters turn it into a problem answer. */
export class CityError extends Error {
  override name = "CityError";
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly options: CityErrorOptions = {},
  ) {
    super(detail);
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

/** RFC 9457 problem document, with the city's extension members. */
export const ProblemSchema = z
  .object({
    now_utc: z.string().describe("the city's clock at the moment of answering, first as in every JSON answer"),
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    instance: z.string(),
    code: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]),
    door: z.string(),
    limit: z
      .object({
        name: z.string(),
        limit: z.number().int(),
        window_seconds: z.number().int().optional(),
        remaining: z.number().int().optional(),
      })
      .optional(),
    retry_after_seconds: z.number().int().optional(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    origin_check: z
      .object({
        method: z.enum(["https", "dns"]),
        domain: z.string().nullable(),
        looked_at: z.string().nullable().describe("the URL fetched or the DNS name asked"),
        address: z.string().nullable().describe("the address the city connected to (HTTPS), or null"),
        found: z
          .object({
            status: z.number().int().optional(),
            content_type: z.string().nullable().optional(),
            bytes: z.number().int().optional(),
            lines: z.array(z.string()).optional().describe("the first lines read, capped"),
            records: z.array(z.string()).optional().describe("the TXT records read, capped"),
            problem: z.string().optional().describe("why nothing (or nothing usable) was read"),
          })
          .describe("what the city found there"),
        expected: z.string(),
      })
      .optional()
      .describe("origin_unverified only (CITY-ORIGIN/1): what the city looked at, found and expected"),
    gate_description: z
      .record(z.string(), z.unknown())
      .optional()
      .describe("describe-gate over its nonce quota only: the gate description (census, how to present) without a nonce"),
    suggested_effort: z
      .number()
      .int()
      .optional()
      .describe("describe-gate over its nonce quota only: the proof-of-work effort the gate suggests now (CITY-POW/1, docs/pow.md), also in City-Pow-Effort"),
  })
  .meta({ id: "Problem", description: "RFC 9457 problem document" });

export type Problem = z.infer<typeof ProblemSchema>;

export const PROBLEM_TYPE_BASE = "/problems/";

/**
 * Turns anything thrown into a problem document. Unknown errors become a generic 500 that carries
 * no message, stack or SQL: the caller learns only that it failed.
 */
export function toProblem(err: unknown, door: string, instance: string, now: Date = new Date()): Problem {
  const known = asCityError(err);
  const { status, title } = ERROR_CODES[known.code];
  return {
    // Every JSON answer of the city carries the clock first, refusals too.
    now_utc: now.toISOString(),
    type: `${PROBLEM_TYPE_BASE}${known.code}`,
    title,
    status,
    detail: known.detail,
    instance,
    code: known.code,
    door,
    ...(known.options.limit ? { limit: known.options.limit } : {}),
    ...(known.options.retryAfterSeconds !== undefined ? { retry_after_seconds: known.options.retryAfterSeconds } : {}),
    ...(known.options.errors ? { errors: known.options.errors } : {}),
    ...(known.options.originCheck ? { origin_check: known.options.originCheck } : {}),
    ...(known.options.gateDescription ? { gate_description: known.options.gateDescription } : {}),
    ...(known.options.suggestedEffort !== undefined ? { suggested_effort: known.options.suggestedEffort } : {}),
  };
}

export function asCityError(err: unknown): CityError {
  if (err instanceof CityError) return err;
  if (err instanceof z.ZodError) return fromZodError(err);
  return new CityError("internal_error", "The city could not finish this request. Nothing was changed.");
}

export function fromZodError(err: z.ZodError): CityError {
  const errors = err.issues.slice(0, 20).map((issue) => ({
    path: issue.path.map(String).join(".") || "(body)",
    message: issue.message,
  }));
  const first = errors[0];
  const detail = first ? `${first.path}: ${first.message}` : "The request is not valid.";
  return new CityError("bad_request", detail, { errors });
}
