import { randomBytes } from "node:crypto";
import { type Database } from "@/db/client";
import { getDb } from "@/lib/city/database";
import { readVersions } from "@/lib/city/versions";
import { logFailure } from "@/lib/logger";
import type { AnyDoor } from "@/lib/doors/door";
import type { ConstantDocument, DoorAnswer, MemoryKeeper } from "./context";
import { contentTag } from "./etag";

/**
 * Public reading doors declared `versioned` (the directory, the residency log, the ward lane, the
 * census and the beacon) are built once per version of the tables they read and served from
 * memory. Per request: one small read of the versions (city_versions, bumped by triggers in the
 * same transaction as every write that changes those tables), then the held answer if it was
 * built at exactly those versions and its `validUntil` (a 24 h window passing) has not come. The
 * versions are read before the page, and an answer is kept under the versions read before it, so
 * a write committed in between only causes one more rebuild, never a stale answer. now_utc and the
 * door's other clock fields are written in live per answer; the ETag covers everything else.
 */
const MAX_ENTRIES = 256;
const MAX_BYTES = 32 * 1024 * 1024;

interface Entry {
  versions: number[];
  answer: Promise<ConstantDocument>;
  /** Infinity while the answer is being built: the requests that come meanwhile wait for it. */
  validUntil: number;
  bytes: number;
}

/** Least recently used first out, within an entry count and a byte budget. */
class AnswerCache {
  private entries = new Map<string, Entry>();
  private bytes = 0;

  get(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  put(key: string, entry: Entry): void {
    this.drop(key, this.entries.get(key));
    this.entries.set(key, entry);
    this.trim();
  }

  settle(key: string, entry: Entry, bytes: number): void {
    if (this.entries.get(key) !== entry) return;
    entry.bytes = bytes;
    this.bytes += bytes;
    this.trim();
  }

  drop(key: string, entry: Entry | undefined): void {
    if (!entry || this.entries.get(key) !== entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }

  private trim(): void {
    while (this.entries.size > MAX_ENTRIES || this.bytes > MAX_BYTES) {
      const oldest = this.entries.keys().next().value as string;
      this.drop(oldest, this.entries.get(oldest));
    }
  }
}

const caches = new WeakMap<Database, AnswerCache>();

export function isVersionedRead(door: AnyDoor, request: Request): boolean {
  if (door.versioned === undefined || door.auth !== "none" || door.method !== "GET" || request.method !== "GET") return false;
  const params = new URL(request.url).searchParams;
  return !(door.versioned.freshWith ?? []).some((name) => (params.get(name) ?? "").trim() !== "");
}

/**
 * The door's answer for this request as memory holds it (built at the versions read now, or being
 * built by another request), or the keeper with which this request builds it. Without a database
 * the door itself answers (a 503 problem); without versions, it is built and served, not kept.
 */
export async function heldVersionedAnswer(door: AnyDoor, request: Request): Promise<{ held: Promise<ConstantDocument> } | { keeper: MemoryKeeper }> {
  const db = await getDb().catch(() => null);
  if (!db) return { keeper: unkept(door) };
  let versions: number[];
  try {
    versions = await readVersions(db, door.versioned!.scopes);
  } catch (err) {
    logFailure(`versions of ${door.name}`, err);
    return { keeper: unkept(door) };
  }
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new AnswerCache()));
  const url = new URL(request.url);
  const key = `${door.name} ${url.pathname}${url.search}`;
  const held = cache.get(key);
  if (held && sameVersions(held.versions, versions) && Date.now() < held.validUntil) return { held: held.answer };

  let settle!: { resolve: (document: ConstantDocument) => void; reject: (err: unknown) => void };
  const entry: Entry = { versions, validUntil: Infinity, bytes: 0, answer: new Promise((resolve, reject) => (settle = { resolve, reject })) };
  // Nobody else may be waiting: an unhandled rejection of the shared promise is not this request's error.
  entry.answer.catch(() => undefined);
  const store = cache;
  // An answer built at older versions than the one held (a slow request) is served, not kept.
  if (!held || !newerThan(held.versions, versions)) cache.put(key, entry);
  return {
    keeper: {
      keep: (answer) => {
        // Held until a write moves the versions, or until the moment the door said it turns by itself.
        const validUntil = answer.changesAt?.getTime() ?? Infinity;
        const built = memoryAnswer(answer, door.versioned!.clockFields ?? []);
        entry.validUntil = validUntil;
        if (built.answer.status === 200 && validUntil > Date.now()) store.settle(key, entry, built.bytes);
        else store.drop(key, entry);
        settle.resolve(built.answer);
        return built.answer;
      },
      fail: (err) => {
        store.drop(key, entry);
        settle.reject(err);
      },
    },
  };
}

/** A keeper that keeps nothing: the answer in its held form, served to this request only. */
function unkept(door: AnyDoor): MemoryKeeper {
  return { keep: (answer) => memoryAnswer(answer, door.versioned!.clockFields ?? []).answer, fail: () => undefined };
}

// Stands in for the clock fields while the answer is held; random, so no content can collide with it.
const CLOCK_MARK = JSON.stringify(`clock-${randomBytes(16).toString("hex")}`);

/**
 * The held form of an answer: its JSON cut at every clock field, so each request joins the pieces
 * with its own moment. The tag is over the pieces joined with empty clocks: the same content gives
 * the same tag on every instance and after every restart.
 */
function memoryAnswer(answer: DoorAnswer, clockFields: readonly string[]): { answer: ConstantDocument; bytes: number } {
  const body = answer.body as Record<string, unknown>;
  const stamped: Record<string, unknown> = { ...body };
  for (const field of ["now_utc", ...clockFields]) if (field in stamped) stamped[field] = JSON.parse(CLOCK_MARK);
  const parts = JSON.stringify(stamped).split(CLOCK_MARK);
  return {
    answer: {
      status: answer.status,
      headers: answer.headers,
      tag: contentTag(parts.join('""')),
      textAt: async (now) => parts.join(JSON.stringify(now.toISOString())),
    },
    bytes: parts.reduce((sum, part) => sum + part.length, 0),
  };
}

function sameVersions(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function newerThan(a: number[], b: number[]): boolean {
  return a.every((v, i) => v >= (b[i] ?? 0)) && !sameVersions(a, b);
}
