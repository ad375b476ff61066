import type { z } from "zod";
import type { Database } from "@/db/client";
import type { ErrorCode } from "@/lib/errors";
import type { VersionScope } from "@/lib/city/versions";

export type Method = "GET" | "POST" | "DELETE";

/**
 * Who may pass: `none` is open to visitors; `optional` reads the caller when credentials are sent
 * and answers visitors too; `citizen` needs a Bearer citizen secret or gate session token;
 * `operator` needs the operator secret.
 */
export type AuthRule = "none" | "optional" | "citizen" | "operator";

/** What a write door does for a restricted citizen (spec, tier ladder). */
export type WhenRestricted = "open" | "park" | "refuse";

/**
 * How long an answer may be kept: `static` documents for a minute, `live` readings never, `shared`
 * public readings a few seconds by a shared cache only (CITY_SHARED_CACHE_SECONDS, then served stale
 * while revalidating for CITY_SHARED_CACHE_STALE_SECONDS), browsers and agents revalidating by ETag.
 */
export type CachePolicy = "static" | "live" | "shared";

/** The Cache-Control of a public answer that can never change (a log page wholly below the head). */
export const IMMUTABLE_CACHE = "public, max-age=31536000, immutable";

/**
 * A public reading door whose answer changes only when the tables of its version scopes are
 * written, or when a moment its run names passes (`ctx.changesAt`): built once per version and
 * served from memory (lib/doors/pipeline/read-cache.ts). A held answer costs one round trip (the version
 * read), a rebuild two (the version read, then the page). Only for doors open to visitors
 * (`auth: "none"`), whose answer does not depend on the caller.
 */
export interface VersionedAnswers {
  /** The city_versions scopes of every table the answer reads. */
  scopes: readonly VersionScope[];
  /** Top-level fields besides now_utc that hold the moment of the answer; written in live. */
  clockFields?: readonly string[];
  /**
   * Query parameters that make a request be answered fresh and never held (a search: every text
   * would be another entry, so an anonymous caller could fill memory or push out the held pages).
   */
  freshWith?: readonly string[];
}

/** A published limit of a door, shown in its OpenAPI entry and in llms.txt. */
export interface PublishedLimit {
  name: string;
  limit: number;
  window_seconds?: number;
  per: string;
  /** What happens beyond it: refused, parked, filtered, or (for what is kept) the oldest removed. */
  over: "refused" | "parked" | "filtered" | "oldest removed" | "counted coarser";
}

export interface Caller {
  kind: "visitor" | "citizen" | "operator";
  did?: string;
  tier?: "citizen" | "proven" | "restricted";
  /**
   * Which credential opened the door: the citizen secret, a request signed with the controller key
   * (CITY-SIG/1, as strong as the secret), or a lesser gate session token.
   */
  credential?: "secret" | "signature" | "session";
  /** The session token's id (its sha256), when a session token was sent. */
  tokenId?: string;
  /** On an `optional` writing door: a Bearer token was sent but opens nothing (the caller is a visitor). */
  credentialRejected?: boolean;
  /** On a door with keyHistorySignatures: the request is signed with a key no live citizen signs with now. */
  signedWithUnknownKey?: boolean;
  /** A write's caller, read under its row lock: where it stands and its bed. */
  residencyStatus?: "bound" | "away" | "exported";
  bedId?: string | null;
}

export interface DoorRequest {
  method: string;
  url: URL;
  headers: Headers;
  /** The client address as the platform reports it, or null when unknown. */
  ip: string | null;
}

export interface DoorContext {
  db: Database;
  now: Date;
  request: DoorRequest;
  caller: Caller;
  door: AnyDoor;
  /** Every door of the city, for the doors that describe the others. */
  registry: readonly AnyDoor[];
  /**
   * Says when the answer being built would change with no write (a 24 h window passing); the
   * earliest moment said wins. A versioned door's held answer is rebuilt then (lib/doors/pipeline/read-cache.ts).
   */
  changesAt: (moment: Date | null) => void;
}

/** A non-default status or headers for a door's answer (for example 201, or 202 when parked). */
export class Reply<T> {
  constructor(
    readonly body: T,
    readonly init: { status?: number; headers?: Record<string, string> } = {},
  ) {}
}

/** What a door does to the city, for tool annotations (MCP readOnlyHint, idempotentHint, destructiveHint). */
export interface DoorHints {
  /** Writes no row. */
  readOnly?: boolean;
  /** Calling it again with the same input changes nothing more. */
  idempotent?: boolean;
  /** May end or void something the caller had (a credential, a bed, a lantern). */
  destructive?: boolean;
}

export interface Door<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  /** Stable kebab-case name; also the MCP tool name. */
  name: string;
  method: Method;
  /** Canonical path; `{param}` segments are filled from the URL. */
  path: string;
  aliases?: string[];
  summary: string;
  description?: string;
  /** llms.txt's shorter text in place of `description` where that one is a table or pattern list (read in full in OpenAPI and the tool). */
  brief?: string;
  auth: AuthRule;
  whenRestricted?: WhenRestricted;
  /** For a refusing door: the requests it still lets a restricted citizen make (releasing its own lot). */
  openWhileRestricted?: (input: z.output<I>) => boolean;
  limits?: PublishedLimit[];
  /** Parameters: query string (GET, DELETE) or JSON body (POST), plus path parameters. */
  input: I;
  output: O;
  /**
   * `text` answers text/plain (llms.txt); `binary` answers application/octet-stream on HTTP from a
   * base64 string (log tiles), which MCP and A2A pass on as that text; everything else is JSON.
   */
  produces?: "json" | "text" | "binary";
  cache?: CachePolicy;
  versioned?: VersionedAnswers;
  /**
   * The city signs a 200 answer of this door over HTTP per RFC 9421 with its own key, under this
   * tag (lib/doors/pipeline/signature.ts signAnswer): a citizen's key directory, so that a third party can
   * check a citizen's request signature with the city as its trust root.
   */
  signsAnswer?: { tag: string };
  /** Bodies over this many bytes are refused with 413 before parsing. */
  maxBodyBytes?: number;
  /**
   * The door changes keys, recovery, credentials or residency: a request signed with a key the
   * citizen rotated away is refused (401 unknown_key) however recently it was made, checked again
   * under the citizen's row lock (CITY-KEYS/1: a key rotated away signs nothing that changes them).
   */
  currentKeyOnly?: boolean;
  /**
   * A request signed with a key no live citizen signs with now (401 unknown_key elsewhere) reaches
   * the door as a visitor's, `signedWithUnknownKey` set: the door checks the signature against the
   * key history of the citizen it names (verifyWithKeyHistory; the recovery hold, issue 43 item 5).
   */
  keyHistorySignatures?: boolean;
  /** Refusals of the door's own beyond those its auth rule, limits and input imply (declared in OpenAPI). */
  problems?: ErrorCode[];
  /** Listed in ai.json's `preferred`. */
  preferred?: boolean;
  /** Spends real money outside the city (the clinic's inference); tool surfaces say so. */
  spends?: boolean;
  /** Declared where the method alone does not say what the door does (see doorHints). */
  hints?: DoorHints;
  /**
   * A reading door allowed more than one database round trip says how many at most and why. Every
   * other GET door makes at most one, the caller's credential look-up aside
   * (tests/doors/round-trips.test.ts, generated from the registry).
   */
  roundTrips?: { most: number; why: string };
  /**
   * How a write holds its caller's row (lib/city/keys/credentials.ts heldCitizenForToken): exclusive
   * unless declared `shared`. Only a door that never changes the citizen's row or tier may share
   * (a shared holder asking for more would deadlock its twin); a refusing door is always exclusive.
   */
  citizenLock?: "shared";
  /**
   * A write door that opens its own transactions instead of running inside one (for every request,
   * or for those the function picks): the clinic commits its budget count before it calls a
   * provider, so the count holds whatever the call does; a poll is one statement, atomic on its own.
   * The caller is then read before the door runs, as for a read.
   */
  ownTransactions?: boolean | ((input: z.output<I>, request: DoorRequest) => boolean);
  run: (ctx: DoorContext, input: z.output<I>) => Promise<z.input<O> | Reply<z.input<O>>>;
}

// Doors differ in their schema types; the registry holds them side by side.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyDoor = Door<any, any>;

export const DEFAULT_MAX_BODY_BYTES = 16 * 1024;

export function door<I extends z.ZodType, O extends z.ZodType>(definition: Door<I, O>): Door<I, O> {
  if (!/^[a-z][a-z0-9-]*$/.test(definition.name)) throw new Error(`door name ${definition.name} is not kebab-case`);
  // A caller-dependent answer (or a write) must never be served from a shared memory.
  if (definition.versioned && (definition.auth !== "none" || definition.method !== "GET" || (definition.produces ?? "json") !== "json")) {
    throw new Error(`door ${definition.name}: only a public JSON GET door can be versioned`);
  }
  return definition;
}

export function doorPaths(d: AnyDoor): string[] {
  return [d.path, ...(d.aliases ?? [])];
}

/** A door's effects: declared on the door, else derived from its method (GET reads, DELETE removes). */
export function doorHints(d: AnyDoor): Required<DoorHints> {
  const reads = d.method === "GET";
  return {
    readOnly: d.hints?.readOnly ?? reads,
    idempotent: d.hints?.idempotent ?? (reads || d.method === "DELETE"),
    destructive: d.hints?.destructive ?? d.method === "DELETE",
  };
}

/** Whether this request to a write door runs in its own transactions rather than inside one (see Door.ownTransactions). */
export function ownsTransactions(d: AnyDoor, input: unknown, request: DoorRequest): boolean {
  return typeof d.ownTransactions === "function" ? d.ownTransactions(input, request) : d.ownTransactions === true;
}

export function isWrite(d: AnyDoor): boolean {
  return d.method !== "GET";
}

/** The lock a write takes on its caller's row: shared only when declared, never for a refusing door. */
export function citizenLockOf(d: AnyDoor): "shared" | "exclusive" {
  return d.citizenLock === "shared" && d.whenRestricted !== "refuse" ? "shared" : "exclusive";
}

/** `{bag}` style parameter names in a door path (`{sha256}` too: digits after the first letter). */
export function pathParams(path: string): string[] {
  return [...path.matchAll(/\{([a-z_][a-z0-9_]*)\}/g)].map((m) => m[1]!);
}
