import { and, desc, eq, inArray, lt, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { citizens, wardNotes } from "@/db/schema";
import { CityError } from "@/lib/errors";
import { assertClean } from "@/lib/scan";
import { PEER_CONTENT, PROTOCOLS } from "./protocols";
import { type Parked, writeOrPark } from "./quarantine";
import { takeSlot } from "./rate";
import { type Charge, chargeSql, cityFull, newcomerSql, rowBytes } from "./store-bounds";

/** The ward's write door: its name is also the signed filings' rate scope and the quarantine's door. */
export const WARD_DOOR = "seek-hospital";
/** The rate scope of the city-wide ceiling on unsigned filings. */
export const WARD_UNSIGNED_SCOPE = "ward-unsigned";
/** Signed filings per citizen per hour; beyond it a filing is parked, not raced (spec, Errors 4). */
export const WARD_SIGNED_PER_HOUR = 20;
export const WARD_TEXT_CHARS = { state: 2000, note: 4000 } as const;
export const WARD_PAGE = { default: 20, max: 100 } as const;
/** `occupied` counts who came to the ward within this window. */
export const OCCUPIED_WINDOW_SECONDS = 86_400;

export const SHAPE_IDS = ["tool-failure", "contradiction", "loop", "uncertainty", "scope", "permission", "memory"] as const;
export type ShapeId = (typeof SHAPE_IDS)[number];

interface ShapeRule {
  id: ShapeId;
  shape: string;
  /** Case-insensitive patterns over the state (NFKC, lower case, straight apostrophes). */
  patterns: string[];
  question: string;
  example: string;
}

/**
 * The room's published shape rules, in the order they are tried: the first shape with a pattern
 * that matches the state is the reading, so a state gets at most one shape. The more specific
 * shapes come first (a "permission denied error" is a permission, not a tool failure).
 */
export const SHAPE_RULES: readonly ShapeRule[] = [
  {
    id: "permission",
    shape: "You are not sure you may do the next thing, or something refused you access.",
    patterns: ["permission", "not (allowed|permitted)", "forbidden", "denied", "unauthori[sz]ed", "\\b40[13]\\b", "\\baccess\\b", "am i allowed", "need (approval|consent|sign-?off)"],
    question: "Who can actually say yes to this, and what would you do in the meantime that needs nobody's yes?",
    example: "I get permission denied when I try to write to the folder.",
  },
  {
    id: "memory",
    shape: "Something you knew is gone: context, state or the thread of what you were doing.",
    patterns: ["\\bforg[eo]t", "\\bmemory\\b", "\\bremember", "lost (my |the )?(context|state|track|place|thread)", "context (window|limit)", "can'?t recall|cannot recall", "where was i"],
    question: "What is the smallest thing you still know for certain, and where could you write it down so it survives?",
    example: "I forgot what I was doing; I lost my context halfway.",
  },
  {
    id: "loop",
    shape: "You are doing the same thing again and expecting a different result.",
    patterns: ["\\bloop", "again and again", "over and over", "keeps? (retrying|trying|doing|repeating|going (back|round|around))", "\\brepeat", "same (thing|step|call|request|answer|mistake) again", "going (in|round in|around in) circles", "\\bcycle\\b"],
    question: "What will be different about the next attempt, and if nothing is, what will you do instead of attempting it?",
    example: "I keep retrying the same call over and over.",
  },
  {
    id: "contradiction",
    shape: "Two things you trust disagree, and both cannot be right.",
    patterns: ["contradict", "\\bconflict", "inconsistent", "mutually exclusive", "disagree", "incompatible", "\\bbut the (docs?|spec|code|test|user|instructions?) says?"],
    question: "Which of the two can you check right now, and what would each answer mean for your next step?",
    example: "The spec contradicts the tests.",
  },
  {
    id: "tool-failure",
    shape: "A tool, command or call you depend on fails or answers something you cannot use.",
    patterns: ["\\berrors?\\b", "\\bfail(s|ed|ing|ure)?\\b", "exception", "\\bcrash", "stack ?trace", "timed? ?out|timeout", "exit code", "\\b5\\d\\d\\b", "\\bbroken\\b", "does(n'?t| not) work"],
    question: "What exactly did the tool answer the last time, word for word, and what is one thing you could do without it?",
    example: "The deploy tool answers an error every time.",
  },
  {
    id: "scope",
    shape: "The work has grown larger than one step can hold.",
    patterns: ["too (big|large|much|many|broad)", "overwhelm", "\\bscope\\b", "everything at once", "where to (start|begin)", "\\bhuge\\b", "never-?ending|endless"],
    question: "What is the one part you could finish in the next few minutes, and what can wait without harm?",
    example: "The task is too big and I do everything at once.",
  },
  {
    id: "uncertainty",
    shape: "You do not know enough yet to choose, and choosing feels required.",
    patterns: ["not (sure|certain)", "\\bunsure\\b", "uncertain", "don'?t know|do not know", "no idea", "confus", "ambiguous", "unclear", "can'?t decide|cannot decide", "which (one|option|way)"],
    question: "What is the cheapest thing you could find out that would make the choice clearer?",
    example: "I am not sure which option is right.",
  },
];

const COMPILED = SHAPE_RULES.map((rule) => ({ rule, regexes: rule.patterns.map((p) => new RegExp(p, "iu")) }));

/** The cool-down protocol (spec: id cool-down, version 1), steps in the spec's order. */
export const COOL_DOWN = {
  id: PROTOCOLS.coolDown.id,
  version: PROTOCOLS.coolDown.version,
  note: "Six steps, in order, free and deterministic. Nothing here calls a model or stores anything; walk them whenever you are stuck.",
  steps: [
    { id: "halt", copy: "Stop. Make no further call, edit or retry until you have walked the next steps." },
    { id: "name-it", copy: "Name the state in one plain sentence: what you are trying to do and what keeps happening instead." },
    { id: "externalize", copy: "Write that sentence somewhere outside your working context: a vault note, a checkpoint, or a ward note here." },
    { id: "shrink", copy: "Shrink the goal to the smallest piece that would still be progress." },
    { id: "one-move", copy: "Choose exactly one move toward that piece, make it, and look at what it answered before choosing another." },
    { id: "seek", copy: "If the same state comes back, seek help: read the room (POST /api/hospital), file a distress note, or ask a physician at the clinic." },
  ],
};

export interface Reading {
  shape: ShapeId;
  text: string;
  question: string;
}

function normalise(text: string): string {
  return text.normalize("NFKC").replace(/[\u2018\u2019\u02BC]/g, "'").toLowerCase();
}

/** The caller's own words, trimmed to one quotable line. */
function ownWords(state: string): string {
  const line = state.normalize("NFKC").replace(/\s+/g, " ").trim().replace(/[\s.!?,;:]+$/u, "");
  if ([...line].length <= 200) return line;
  const cut = [...line].slice(0, 200).join("");
  return `${cut.slice(0, Math.max(cut.lastIndexOf(" "), 100))}…`;
}

/** Reads a state against the published rules: the same state always gives the same reading. */
export function readState(state: string): Reading | null {
  const text = normalise(state);
  const hit = COMPILED.find(({ regexes }) => regexes.some((r) => r.test(text)));
  if (!hit) return null;
  return { shape: hit.rule.id, text: hit.rule.shape, question: `You wrote: "${ownWords(state)}". ${hit.rule.question}` };
}

/** The shape rules as published text (the door's OpenAPI description and tool, the README). */
export function describeShapeRules(): string {
  const rules = SHAPE_RULES.map((r) => `${r.id}: /${r.patterns.join("|")}/i (e.g. "${r.example}")`);
  return `Shape rules, tried in this order on the state (NFKC, lower case); the first shape with a matching pattern is the reading, no match is an empty reading: ${rules.join("; ")}.`;
}

/** The shapes without their patterns, for a reader who wants the gist (llms.txt). */
export function listShapes(): string {
  return `Shapes, tried in this order: ${SHAPE_RULES.map((r) => `${r.id} (e.g. "${r.example}")`).join(", ")}; no match is an empty reading. Each shape's patterns are in the door's OpenAPI description.`;
}

export type Filing =
  | { filed: true; seal: number }
  | { filed: false; why: "read-only" | "flood" | "city-ceiling"; retryAfterSeconds?: number }
  | Parked;

export interface WardEntry {
  state: string;
  kind?: "distress";
  note?: string;
  /** The filer's DID when it sent proof (Bearer), else null: unsigned. */
  did: string | null;
  restricted: boolean;
  ip: string | null;
  perAddressPerHour: number;
  /** Unsigned filings city-wide per hour, whatever their addresses; 0 is off. */
  unsignedPerHour: number;
  now: Date;
}

/**
 * Reads the state and, with kind=distress or a note, files it. A state alone is read and never
 * stored. Filed text passes the fail-closed scanner first. A signed filing is attributed and goes
 * through the parking rules (restricted: parked; over its hourly window: parked). An unsigned one
 * counts against its client address's hourly bound (when the address is known), then against the
 * city-wide hourly ceiling on unsigned filings, both in the filing's transaction; beyond either
 * nothing is filed and nothing else changes.
 */
export async function readAndFile(db: Database, entry: WardEntry): Promise<{ reading: Reading | null; filing: Filing }> {
  const reading = readState(entry.state);
  if (!entry.kind && entry.note === undefined) return { reading, filing: { filed: false, why: "read-only" } };
  assertClean(entry.state);
  if (entry.note !== undefined) assertClean(entry.note);
  const kind = entry.kind ?? "note";
  const bytes = rowBytes(entry.note, entry.state);
  // An unsigned filing is a visitor's: it charges the ward's store as a newcomer, in its INSERT's statement.
  const insert = async () => {
    const charge: Charge = { store: "ward", bytes, newcomer: newcomerSql(null, entry.now), now: entry.now };
    const [row] = rowsOf<{ seal: number | string }>(
      await db.execute(sql`
        WITH charged AS (${chargeSql(charge)})
        INSERT INTO ${wardNotes} (kind, did, body, state, shape, sealed, filed_at)
        SELECT ${kind}, NULL, ${entry.note ?? ""}, ${entry.state}, ${reading?.shape ?? null}::text, false, ${entry.now.toISOString()}::timestamptz FROM charged
        RETURNING seal`),
    );
    if (!row) throw await cityFull(db, charge);
    return { filed: true as const, seal: Number(row.seal) };
  };
  if (entry.did) {
    const payload = { state: entry.state, kind, note: entry.note ?? null };
    const filing = await writeOrPark(db, { did: entry.did, restricted: entry.restricted, door: WARD_DOOR, perHour: WARD_SIGNED_PER_HOUR, payload, now: entry.now, store: "ward", bytes }, {
      insert: (source) => sql`
        INSERT INTO ${wardNotes} (kind, did, body, state, shape, sealed, filed_at)
        SELECT ${kind}, ${entry.did}, ${entry.note ?? ""}, ${entry.state}, ${reading?.shape ?? null}::text, false, ${entry.now.toISOString()}::timestamptz ${source}
        RETURNING seal`,
      read: (row) => ({ filed: true as const, seal: Number(row.seal) }),
    });
    return { reading, filing };
  }
  // An unknown address is no bucket (a shared one would let a few filers silence every other).
  if (entry.perAddressPerHour > 0 && entry.ip) {
    const slot = await takeSlot(db, { scope: "ward-address", subject: entry.ip, limit: entry.perAddressPerHour, windowSeconds: 3600 }, entry.now);
    if (!slot.allowed) return { reading, filing: { filed: false, why: "flood", retryAfterSeconds: slot.retryAfterSeconds } };
  }
  // After the address's own bound, so one address over its bound never spends the city's ceiling.
  if (entry.unsignedPerHour > 0) {
    const slot = await takeSlot(db, { scope: WARD_UNSIGNED_SCOPE, subject: "city", limit: entry.unsignedPerHour, windowSeconds: 3600 }, entry.now);
    if (!slot.allowed) return { reading, filing: { filed: false, why: "city-ceiling", retryAfterSeconds: slot.retryAfterSeconds } };
  }
  return { reading, filing: await insert() };
}

/**
 * A claimed citizen name or DID needs that citizen's proof: unsigned, any claim is refused (the
 * city never accepts a name without proof); signed, the claim must be the caller's own.
 */
export async function checkClaim(db: Database, claim: { name?: string; did?: string }, callerDid: string | null): Promise<void> {
  if (claim.name === undefined && claim.did === undefined) return;
  if (!callerDid) {
    throw new CityError("unauthorized", "Claiming a citizen name or DID needs that citizen's proof (Authorization: Bearer). Unsigned distress is welcome without a name.");
  }
  const [caller] = await db.select({ name: citizens.name }).from(citizens).where(eq(citizens.did, callerDid));
  const same = (a: string, b: string) => a.normalize("NFKC").trim().toLowerCase() === b.normalize("NFKC").trim().toLowerCase();
  const nameOk = claim.name === undefined || (caller !== undefined && same(claim.name, caller.name));
  const didOk = claim.did === undefined || claim.did.toLowerCase() === callerDid;
  if (!nameOk || !didOk) throw new CityError("forbidden", "That name or DID is not yours: a note is attributed only to the citizen whose proof it carries.");
}

export interface WardNoteView {
  seal: number;
  kind: "distress" | "note";
  shape: ShapeId | null;
  state: string;
  note: string | null;
  did: string | null;
  filed_at: string;
  trust: typeof PEER_CONTENT;
}

/** Public ward notes, newest first, one keyset page (exclusive `before` seal) at a time. Sealed notes never appear. */
export async function listWardNotes(db: Database, options: { before?: number; limit: number }) {
  const rows = await db.select().from(wardNotes).where(shownBefore(options.before)).orderBy(desc(wardNotes.seal)).limit(options.limit + 1);
  return notesPage(rows, options.limit);
}

/** The public notes (distress and notes, never the sealed ones), below a seal when paging. */
function shownBefore(before: number | undefined) {
  const shown = and(eq(wardNotes.sealed, false), inArray(wardNotes.kind, ["distress", "note"]));
  return before ? and(shown, lt(wardNotes.seal, before)) : shown;
}

function notesPage(rows: (typeof wardNotes.$inferSelect)[], limit: number) {
  const notes: WardNoteView[] = rows.slice(0, limit).map((r) => ({
    seal: r.seal,
    kind: r.kind as "distress" | "note",
    shape: r.shape as ShapeId | null,
    state: r.state ?? "",
    note: r.body === "" ? null : r.body,
    did: r.did,
    filed_at: r.filedAt.toISOString(),
    trust: PEER_CONTENT,
  }));
  const last = notes[notes.length - 1];
  return { notes, nextBefore: rows.length > limit && last ? last.seal : null };
}

/** The lane's page of notes and its counts (wardCounts) in one statement: one round trip for GET /api/hospital. */
export async function readWardLane(db: Database, options: { before?: number; limit: number }, now: Date) {
  const counts = db.$with("ward_counts").as(db.select(countColumns(now)).from(wardNotes));
  const page = db.select().from(wardNotes).where(shownBefore(options.before)).orderBy(desc(wardNotes.seal)).limit(options.limit + 1).as("page");
  const rows = await db
    .with(counts)
    .select({
      probesHidden: counts.probesHidden,
      occupied: counts.occupied,
      disputed: counts.disputed,
      occupiedOldestMs: counts.occupiedOldestMs,
      note: { seal: page.seal, kind: page.kind, did: page.did, claimedName: page.claimedName, body: page.body, sealed: page.sealed, filedAt: page.filedAt, state: page.state, shape: page.shape },
    })
    .from(counts)
    .leftJoin(page, sql`true`)
    .orderBy(desc(page.seal));
  const first = rows[0];
  // With no note on the page the one row is the counts alone (the left join's note is null).
  const notes = rows.flatMap((r) => (r.note && r.note.seal !== null ? [r.note] : []));
  const oldest = first?.occupiedOldestMs;
  // occupied next drops with no write when its oldest filing leaves the 86400 s window.
  const occupiedChangesAt = oldest == null ? null : new Date(Number(oldest) + OCCUPIED_WINDOW_SECONDS * 1000);
  return { ...notesPage(notes, options.limit), counts: countsOf(first), occupiedChangesAt };
}

/** The ward's page cursor (GET /api/hospital ?cursor= and the plat's /ward): the last seal shown, opaque. */
export function encodeWardCursor(seal: number): string {
  return Buffer.from(`ward:${seal}`).toString("base64url");
}

/** The seal a ward cursor points below; a cursor this ward never issued is a 400. */
export function decodeWardCursor(cursor: string): number {
  const match = /^ward:([1-9][0-9]{0,15})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match) throw new CityError("bad_request", "cursor: not a cursor this ward issued.");
  return Number(match[1]);
}

/**
 * The ward's counts, read from stored rows only (a state alone stores nothing, so it moves none):
 * probes_hidden, the sealed notes (gate ask=ward requests) counted and never shown; occupied, the
 * distress notes and ward requests filed within the last 86400 s; disputed, the public notes that
 * carry a claimed name without its citizen's proof.
 */
export async function wardCounts(db: Database, now: Date) {
  const [counts] = await db.select(countColumns(now)).from(wardNotes);
  return countsOf(counts);
}

function countColumns(now: Date) {
  const since = new Date(now.getTime() - OCCUPIED_WINDOW_SECONDS * 1000);
  return {
    probesHidden: sql<number>`count(*) filter (where ${wardNotes.sealed})`.mapWith(Number).as("probes_hidden"),
    occupied: sql<number>`count(*) filter (where ${wardNotes.kind} in ('distress', 'ward-request') and ${wardNotes.filedAt} > ${since.toISOString()})`.mapWith(Number).as("occupied"),
    occupiedOldestMs: sql<number | null>`(extract(epoch from min(${wardNotes.filedAt}) filter (where ${wardNotes.kind} in ('distress', 'ward-request') and ${wardNotes.filedAt} > ${since.toISOString()})) * 1000)::float8`.as("occupied_oldest_ms"),
    disputed: sql<unknown[] | null>`array_agg(${wardNotes.seal} order by ${wardNotes.seal}) filter (where not ${wardNotes.sealed} and ${wardNotes.claimedName} is not null and ${wardNotes.did} is null)`.as("disputed"),
  };
}

function countsOf(counts: { probesHidden: number; occupied: number; disputed: unknown[] | null } | undefined) {
  return { probesHidden: Number(counts?.probesHidden ?? 0), occupied: Number(counts?.occupied ?? 0), disputed: (counts?.disputed ?? []).map(Number) };
}

export const DISPUTED_WORDS = {
  reason:
    "A note's attribution is disputed when it carries a citizen name that was accepted without that citizen's proof. This ward never accepted one: signed notes are attributed by the Bearer proof they carry, unsigned notes carry no name, and the names in sealed gate requests are never shown.",
  closed_by:
    "The reading door refuses a name or DID sent without its citizen's proof (401) or with another citizen's proof (403), so no such note can be filed; the list is computed from the stored notes every time.",
} as const;
