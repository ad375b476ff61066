import { type Database } from "@/db/client";
import { signDocument } from "@/lib/city/signing";
import { env } from "@/lib/env";
import type { AnyDoor } from "@/lib/doors/door";
import type { ConstantDocument, DoorAnswer, MemoryKeeper } from "./context";
import { contentTag, spliceNowUtc, splitNowUtc } from "./etag";
import { getDb } from "@/lib/city/database";

/**
 * A constant document (a public GET door declared `cache: "static"`: ai.json, the discovery
 * schema, llms.txt, openapi.json, the city card, the agent card, JWKS, /contact, the A2A
 * description) is built once per instance and database (so once per signing key: an instance keeps
 * its key for its life), then served from memory. `now_utc` is
 * spliced in live; the city card, whose signature covers `now_utc`, is re-signed per answer with
 * the cached key (no database round trip). The ETag covers the content without `now_utc`.
 * `Last-Modified` is when this instance built the document: everything it is made of (the build,
 * the configuration, the signing key) is read by then and fixed for the instance's life, so the
 * content cannot have changed since; another instance's time may differ, never its content.
 */
const built = new WeakMap<Database, Map<string, Promise<ConstantDocument>>>();

export function isConstantDocument(door: AnyDoor, request: Request): boolean {
  return door.cache === "static" && door.auth === "none" && door.method === "GET" && new URL(request.url).search === "";
}

/**
 * The door's document as this instance holds it (built, or being built by another request), or
 * the keeper with which this request builds it: the door runs once per instance and database.
 */
export async function heldDocument(door: AnyDoor): Promise<{ held: Promise<ConstantDocument> } | { keeper: MemoryKeeper }> {
  const db = await getDb();
  let documents = built.get(db);
  if (!documents) built.set(db, (documents = new Map()));
  const entry = documents.get(door.name);
  if (entry) return { held: entry };
  const store = documents;
  let settle!: { resolve: (document: ConstantDocument) => void; reject: (err: unknown) => void };
  const building = new Promise<ConstantDocument>((resolve, reject) => (settle = { resolve, reject }));
  // Nobody else may be waiting: an unhandled rejection of the shared promise is not this request's error.
  building.catch(() => store.delete(door.name));
  store.set(door.name, building);
  return {
    keeper: {
      keep: (answer) => {
        const document = documentOf(door, answer, new Date().toUTCString());
        settle.resolve(document);
        return document;
      },
      fail: (err) => settle.reject(err),
    },
  };
}

function documentOf(door: AnyDoor, answer: DoorAnswer, lastModified: string): ConstantDocument {
  const base = { status: answer.status, headers: answer.headers, lastModified };
  if (door.produces === "text") {
    const text = String(answer.body);
    return { ...base, tag: contentTag(text), textAt: async () => text };
  }
  const text = JSON.stringify(answer.body);
  const body = answer.body as Record<string, unknown>;
  const split = splitNowUtc(text);
  if (!("now_utc" in body)) return { ...base, tag: contentTag(text), textAt: async () => text };
  if (Array.isArray(body.signatures)) {
    const { signatures: _old, now_utc: _then, ...unsigned } = body;
    return {
      ...base,
      tag: contentTag(JSON.stringify({ now_utc: "", ...unsigned })),
      textAt: async (now) => JSON.stringify(await signDocument(await getDb(), { now_utc: now.toISOString(), ...unsigned }, env().CITY_BASE_URL)),
    };
  }
  if (split) return { ...base, tag: contentTag(text), textAt: async (now) => spliceNowUtc(split.rest, now) };
  // now_utc not first: the object keeps its key order with the live value in place.
  return {
    ...base,
    tag: contentTag(JSON.stringify({ ...body, now_utc: "" })),
    textAt: async (now) => JSON.stringify({ ...body, now_utc: now.toISOString() }),
  };
}
