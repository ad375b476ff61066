import type { Database } from "@/db/client";
import type { LogTicket } from "@/lib/city/logs/transparency-log";
import type { AnyDoor, Caller, DoorRequest, Reply } from "@/lib/doors/door";
import type { CityError } from "@/lib/errors";

/**
 * An answer held in memory and served from there: a constant document (constant-documents.ts) or a
 * versioned read (read-cache.ts). Its tag covers its content without the clock fields, which are
 * written in live per answer (`textAt`).
 */
export interface ConstantDocument {
  status: number;
  headers: Record<string, string>;
  tag: string;
  /** When this instance built the document, as an HTTP date (whole seconds, RFC 9110 5.6.7); none for a versioned read. */
  lastModified?: string;
  /** The answer's text at `now`. */
  textAt: (now: Date) => Promise<string>;
}

/** The request that builds an answer others wait for: it keeps the door's answer in memory (or says why it could not). */
export interface MemoryKeeper {
  /** The held form of the door's answer, kept for the requests that come next (and waited for by those already here). */
  keep(answer: DoorAnswer): ConstantDocument;
  /** The build failed: those waiting get the same error, and nothing is kept. */
  fail(err: unknown): void;
}

/** The stages of a request's way, in the order it takes them (way.ts STAGES). */
export type StageName = "read" | "memory" | "parse" | "caller" | "guard" | "run" | "settle" | "tag" | "sign" | "send";

/** A door's answer once its write committed and its receipts were settled: what every surface sends in its own form. */
export interface DoorAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  /** The earliest moment the door said its answer changes with no write; null: only a write changes it. */
  changesAt: Date | null;
}

/** An answer about to be sent over HTTP: its status, headers and bytes (the tag stage's, signed by the sign stage). */
export interface Outgoing {
  status: number;
  headers: Headers;
  body: string | Uint8Array<ArrayBuffer>;
  /** A 304 Not Modified: the validators only, no body. */
  notModified: boolean;
}

/**
 * One request's way through the city: what came in, then what each stage adds, each once. A
 * stage reads what the stages before it left and writes its own fields; nothing else carries
 * state from one stage to the next.
 */
export interface RequestContext {
  readonly door: AnyDoor;
  /** What the door sees of the request, on every surface. */
  readonly request: DoorRequest;
  /** The HTTP request when it came by a route handler; null when a surface (MCP, A2A) handed the door its arguments. */
  readonly http: Request | null;
  /** The route's path parameters (HTTP only). */
  readonly params: Readonly<Record<string, string>>;
  readonly now: Date;
  /** The stages entered, in order (the way this request took). */
  readonly trace: StageName[];
  /** read: the input before the door's schema (the query or JSON body, and the path parameters). */
  raw: unknown;
  /** memory: an answer held in memory (a constant document, a versioned read) that this request is served. */
  held: ConstantDocument | null;
  /** memory: this request builds the answer others wait for; the tag stage keeps it. */
  keeper: MemoryKeeper | null;
  /** The database, reached once by the first stage that needs it. */
  db: Database | null;
  /** caller, guard, run: what they run on, the write's transaction or the database (way.ts). */
  handle: Database | null;
  /** The caller, guard and run stages run inside the write's transaction (way.ts). */
  inTransaction: boolean;
  /** parse: the input as the door's schema gave it, or why it did not parse (thrown by guard, after the caller: 401 before 400). */
  parsed: { ok: true; input: unknown } | { ok: false; error: unknown } | null;
  /** caller: who is asking (inside a write's transaction, held under the citizen's row lock). */
  caller: Caller | null;
  /** caller: the request was proven by its signature (a refused signed write spends its nonce again). */
  signed: boolean;
  /** run: the door's reply, checked against its output schema, or a refusal whose writes are kept. */
  outcome: { reply: Reply<unknown>; body: unknown } | { kept: CityError } | null;
  /** run: the earliest moment the door said its answer changes with no write. */
  changesAt: Date | null;
  /** run: the log entries the write recorded, settled once it committed. */
  tickets: LogTicket[];
  /** settle: the door's answer, receipts filled in. */
  answer: DoorAnswer | null;
  /** tag: the answer as it will be sent; sign adds its signature headers. */
  outgoing: Outgoing | null;
  /** send: the HTTP answer. */
  response: Response | null;
}

/** A fresh context for one request of `door`. */
export function requestContext(
  door: AnyDoor,
  request: DoorRequest,
  options: { http?: Request; params?: Record<string, string>; raw?: unknown } = {},
): RequestContext {
  return {
    door,
    request,
    http: options.http ?? null,
    params: options.params ?? {},
    now: new Date(),
    trace: [],
    raw: options.raw ?? {},
    held: null,
    keeper: null,
    db: null,
    handle: null,
    inTransaction: false,
    parsed: null,
    caller: null,
    signed: false,
    outcome: null,
    changesAt: null,
    tickets: [],
    answer: null,
    outgoing: null,
    response: null,
  };
}
