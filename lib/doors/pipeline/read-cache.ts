import { randomBytes } from "node:crypto";
import { type Database } from "@/db/client";
import { getDb } from "@/lib/city/database";
import { readVersions } from "@/lib/city/versions";
import { logFailure } from "@/lib/logger";
import type { ConstantDocument } from "./constant-documents";
import type { AnyDoor } from "@/lib/doors/door";
import { contentTag } from "./etag";
import { type DoorAnswer, doorRequestOf, invokeDoor } from "./invoke";

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

/** The door's answer for this request: from memory when nothing it reads has changed since it was built. */
export async function versionedAnswer(door: AnyDoor, request: Request, raw: Record<string, unknown>): Promise<ConstantDocument> {
  const db = await getDb().catch(() => null);
  // Without a database the door itself answers (a 503 problem); without versions, uncached.
  if (!db) return (await build(door, request, raw)).answer;
  let versions: number[];
  try {
    versions = await readVersions(db, door.versioned!.scopes);
  } catch (err) {
    logFailure(`versions of ${door.name}`, err);
    return (await build(door, request, raw)).answer;
  }
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new AnswerCache()));
  const url = new URL(request.url);
  const key = `${door.name} ${url.pathname}${url.search}`;
  const held = cache.get(key);
  if (held && sameVersions(held.versions, versions) && Date.now() < held.validUntil) return held.answer;

  const entry: Entry = { versions, validUntil: Infinity, bytes: 0, answer: Promise.resolve(null as never) };
  const store = cache;
  entry.answer = build(door, request, raw).then(
    (built) => {
      entry.validUntil = built.validUntil;
      if (built.answer.status === 200 && built.validUntil > Date.now()) store.settle(key, entry, built.bytes);
      else store.drop(key, entry);
      return built.answer;
    },
    (err: unknown) => {
      store.drop(key, entry);
      throw err;
    },
  );
  // An answer built at older versions than the one held (a slow request) is served, not kept.
  if (!held || !newerThan(held.versions, versions)) cache.put(key, entry);
  return entry.answer;
}

async function build(door: AnyDoor, request: Request, raw: Record<string, unknown>) {
  const answer = await invokeDoor(door, raw, doorRequestOf(request, "GET"));
  // Held until a write moves the versions, or until the moment the door said it turns by itself.
  const validUntil = answer.changesAt?.getTime() ?? Infinity;
  return { ...memoryAnswer(answer, door.versioned!.clockFields ?? []), validUntil };
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
