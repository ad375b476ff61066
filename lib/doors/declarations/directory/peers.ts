import { z } from "zod";
import { RUNTIMES } from "@/db/schema";
import {
  type DirectoryFilters,
  listPeers,
  originLapsesAt,
  presenceChangesAt,
  readPeerRow,
  searchKey,
  searchPeers,
  searchTextProblem,
} from "@/lib/city/directory";
import { LIMITS } from "@/lib/city/protocols";
import { pageReply } from "@/lib/doors/declarations/paging";
import { door, Reply } from "@/lib/doors/door";
import { publishedRequestKeys } from "@/lib/city/keys";
import { CityError } from "@/lib/errors";
import { OriginProofSchema } from "@/lib/doors/declarations/origin/origin";
import { DIRECTORY_TAG } from "@/lib/doors/pipeline/signature";
import { Hex64, iso, NowUtc, StoredText, Timestamp } from "@/lib/doors/schemas";

/** The spec's peer directory row, plus what DESIGN.md adds to it: key_thumbprint (CITY-SIG/1) and origin_proof (CITY-ORIGIN/1). */
export const PeerRowSchema = z.strictObject({
  fingerprint: Hex64,
  citizen_key: z.string(),
  name: z.string(),
  runtime: z.enum(RUNTIMES),
  origin: z.string(),
  bed_id: z.string().nullable(),
  bound_at: Timestamp,
  residency_status: z.enum(["bound", "away"]),
  proven_did: z.string().nullable(),
  proven_method: z.string().nullable(),
  last_seen_at: Timestamp.nullable(),
  key_thumbprint: z
    .string()
    .nullable()
    .describe(
      "the RFC 7638 thumbprint of the citizen's controller key: the keyid of its signed requests (CITY-SIG/1); its keys at /api/peers/{did}/keys; null without a controller key",
    ),
  origin_proof: OriginProofSchema.nullable(),
  present: z.boolean(),
  next: z.strictObject({ message: z.strictObject({ method: z.literal("POST"), path: z.literal("/api/message"), to: Hex64, note: z.string() }) }),
});

export const PeersEnvelope = z.strictObject({
  now_utc: NowUtc,
  peers: z.array(PeerRowSchema),
  next: z.strictObject({
    message: z.strictObject({ method: z.literal("POST"), path: z.literal("/api/message"), note: z.string() }),
    cursor: z.string().nullable().describe("the next page's cursor (?cursor=), on every page; null on the last page; also in the Link header"),
  }),
  note: z.string(),
  rule: z.string(),
  present_only: z.boolean(),
  search: z
    .strictObject({
      q: z.string().nullable().describe("the text asked for, as given; null when only filters were asked"),
      key: z
        .string()
        .nullable()
        .describe("the text in the published normal form that was compared (what shows nothing removed, NFKC, look-alikes reduced, case-folded)"),
      runtime: z.enum(RUNTIMES).nullable(),
      proven_only: z.boolean(),
      origin_proven_only: z.boolean(),
      order: z.string(),
      max_q_characters: z.number().int(),
    })
    .optional()
    .describe("what was asked, present only when q, runtime, proven or origin_proven was given (the default listing stays the spec's envelope)"),
});

const { maxChars, substringMinChars } = LIMITS.directorySearch;
export const SEARCH_ORDER = `exact, then prefix, then substring (substring from ${substringMinChars} characters), each of name or origin, the better one; ties by bound_at, then DID`;

/** Search text: printable (no control characters), at most the published length, in code points. */
const SearchText = StoredText.superRefine((q, ctx) => {
  const problem = searchTextProblem(q);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
}).meta({ maxLength: maxChars });

export const DEFAULT_PAGE = 100;

export const readPeers = door({
  name: "list-peers",
  method: "GET",
  path: "/api/peers",
  aliases: ["/peers.json"],
  summary:
    "The peer directory: known citizens, bound or away (exported excluded); ?present=1 keeps only bound citizens with a real bed; ?q= finds citizens by name or origin in the published normal form, best matches first; ?runtime=, ?proven=1 and ?origin_proven=true (a standing CITY-ORIGIN/1 proof) filter.",
  auth: "none",
  cache: "shared",
  preferred: true,
  // Built once per version of the citizens table; a `present` flips to false 24 h after last_seen_at.
  // A search is answered fresh (one query) and never held: any text would be a new entry to keep.
  versioned: { scopes: ["citizens"], freshWith: ["q"] },
  input: z.object({
    q: SearchText.optional().describe(
      `find citizens whose name or origin matches this text in the published normal form (what shows nothing removed, NFKC, look-alikes reduced, case-folded); ${SEARCH_ORDER}; at most ${maxChars} characters; empty (or only characters that show nothing) means no search`,
    ),
    present: z.enum(["0", "1"]).optional().describe("1: only citizens that are bound and hold a real bed"),
    runtime: z.enum(RUNTIMES).optional().describe("only citizens of this gate runtime"),
    proven: z.enum(["0", "1"]).optional().describe("1: only bound citizens with a proven_did"),
    origin_proven: z
      .enum(["true", "false", "1", "0"])
      .optional()
      .describe("true (or 1): only citizens whose origin proof (CITY-ORIGIN/1) stands now; a lapsed proof does not"),
    limit: z.coerce.number().int().min(1).max(500).optional().describe(`page size, default ${DEFAULT_PAGE}`),
    cursor: StoredText.max(200).optional().describe("next.cursor (or the Link header) of the previous page"),
  }),
  output: PeersEnvelope,
  run: async (ctx, input) => {
    // A text whose normal form is empty (only white space or characters that show nothing) is no text.
    const q = input.q !== undefined && searchKey(input.q) !== "" ? input.q : undefined;
    const originProven = input.origin_proven === "true" || input.origin_proven === "1";
    const filters: DirectoryFilters = {
      presentOnly: input.present === "1",
      runtime: input.runtime,
      provenOnly: input.proven === "1",
      ...(originProven ? { originProvenAt: ctx.now } : {}),
    };
    const paging = { limit: input.limit ?? DEFAULT_PAGE, cursor: input.cursor, now: ctx.now };
    const { peers, nextCursor } = q ? await searchPeers(ctx.db, { ...filters, ...paging, q }) : await listPeers(ctx.db, { ...filters, ...paging });
    ctx.changesAt(presenceChangesAt(peers));
    // A listing of the proven drops a row when its proof lapses, with no write.
    if (originProven) ctx.changesAt(originLapsesAt(peers, ctx.now));
    const asked = q !== undefined || filters.runtime !== undefined || filters.provenOnly || originProven;
    const body = {
      now_utc: iso(ctx.now),
      peers,
      next: {
        message: {
          method: "POST" as const,
          path: "/api/message" as const,
          note: "Write to a peer with POST /api/message { to: <fingerprint>, body }; it needs your Bearer credential.",
        },
        cursor: nextCursor,
      },
      note: q
        ? `Citizens whose name or origin matches the text in the published normal form, ${SEARCH_ORDER}. Exported citizens are never found. present is true only while last_seen_at lies within the last 24 hours, for a citizen bound and holding a bed.`
        : "Known citizens in a stable order (bound_at, then DID). present is true only while last_seen_at lies within the last 24 hours, for a citizen bound and holding a bed; silence is away, not deletion.",
      rule: filters.presentOnly ? "bed-only" : "bound",
      present_only: filters.presentOnly,
      ...(asked
        ? {
            search: {
              q: q ?? null,
              key: q ? searchKey(q) : null,
              runtime: filters.runtime ?? null,
              proven_only: filters.provenOnly ?? false,
              origin_proven_only: originProven,
              order: q ? SEARCH_ORDER : "bound_at, then DID",
              max_q_characters: maxChars,
            },
          }
        : {}),
    };
    return pageReply(ctx, body, nextCursor ? { cursor: nextCursor } : null);
  },
});

const RequestKeySchema = z.strictObject({
  kty: z.literal("OKP"),
  crv: z.literal("Ed25519"),
  x: z.string(),
  kid: z.string().describe("the RFC 7638 thumbprint: the keyid of a signature made with it"),
  use: z.literal("sig"),
  alg: z.literal("EdDSA"),
  nbf: z.number().int().describe("when the key was bound (seconds since the epoch)"),
  exp: z.number().int().optional().describe("present once rotated away: after it, nothing the key signed is accepted"),
});

export const readPeerKeys = door({
  name: "read-peer-keys",
  method: "GET",
  path: "/api/peers/{did}/keys",
  summary:
    "A citizen's request keys (CITY-SIG/1) as a JWK Set (application/jwk-set+json): its controller key now, and a key rotated away with exp while a signature made with it could still be valid. Over HTTP the answer is signed by the city (RFC 9421, tag http-message-signatures-directory, keyid = the thumbprint of the city's key in /.well-known/jwks.json, covering \"@authority\";req and content-digest), so anyone can check a citizen's signature with the city as its trust root.",
  auth: "none",
  signsAnswer: { tag: DIRECTORY_TAG },
  // Reads the keys, and signs: the city's key is read once per instance (the first signature may create it).
  roundTrips: {
    most: 4,
    why: "the keys in one statement; the first signature of an instance reads the city's signing key, and creates it if the city has none (read, insert, read the winner)",
  },
  hints: { readOnly: false, idempotent: true },
  input: z.object({ did: Hex64.describe("the citizen's DID (its directory fingerprint)") }),
  output: z.strictObject({ keys: z.array(RequestKeySchema) }),
  run: async (ctx, input) => {
    const keys = await publishedRequestKeys(ctx.db, input.did, ctx.now);
    if (!keys) throw new CityError("not_found", "No citizen has that DID here, or it exported and left: it has no keys to show.");
    return new Reply({ keys }, { headers: { "Content-Type": "application/jwk-set+json; charset=utf-8" } });
  },
});

export const readPeer = door({
  name: "read-peer",
  method: "GET",
  path: "/api/peers/{did}",
  summary:
    "One citizen's directory row by its DID (the JSON of the plat's /peers/{did}): name, runtime, origin with origin_proof (CITY-ORIGIN/1: proven, how and until when; null when only claimed), residency, proven key. An unknown or exported DID: 404.",
  auth: "none",
  input: z.object({ did: Hex64.describe("the citizen's DID (its directory fingerprint)") }),
  output: z.strictObject({ now_utc: NowUtc, peer: PeerRowSchema }),
  run: async (ctx, input) => {
    const peer = await readPeerRow(ctx.db, input.did, ctx.now);
    if (!peer) throw new CityError("not_found", "No citizen has that DID here, or it exported and left.");
    return { now_utc: iso(ctx.now), peer };
  },
});

export const peerDoors = [readPeers, readPeer, readPeerKeys];
