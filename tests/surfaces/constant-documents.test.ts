import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { flattenedVerify, importJWK, type JWK } from "jose";
import { signingPayload } from "@/lib/city/signing";
import { readAgentCard, readCard, readContact, readDiscovery, readJwks, readLlms, readOpenApi } from "@/lib/doors/surfaces/discovery";
import { serveDoor } from "@/lib/doors/pipeline/http";
import { readPeers } from "@/lib/doors/declarations/directory/peers";
import type { AnyDoor } from "@/lib/doors/door";
import { describeOnDatabases } from "../support/databases";
import { admit } from "../support/gate";

async function get(door: AnyDoor, headers: Record<string, string> = {}) {
  const response = await serveDoor(door, new Request(`http://city.test${door.path}`, { headers }));
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describeOnDatabases("constant documents and conditional reads", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("serves each constant document with a live now_utc and one content ETag", async () => {
    const discovery = [await get(readDiscovery), await get(readDiscovery)];
    expect(discovery[1]!.text).toBe(discovery[0]!.text);
    expect(discovery[1]!.headers.get("etag")).toBe(discovery[0]!.headers.get("etag"));
    for (const door of [readContact, readCard]) {
      const first = await get(door);
      await new Promise((r) => setTimeout(r, 5));
      const second = await get(door);
      expect(first.status, door.name).toBe(200);
      const [a, b] = [JSON.parse(first.text), JSON.parse(second.text)];
      expect(Date.parse(b.now_utc)).toBeGreaterThan(Date.parse(a.now_utc));
      expect(Math.abs(Date.now() - Date.parse(b.now_utc))).toBeLessThan(5_000);
      expect(first.headers.get("etag")).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
      expect(second.headers.get("etag")).toBe(first.headers.get("etag"));
    }
  });

  it("re-signs the city card for each answer, so its signature covers the live now_utc", async () => {
    const { keys } = JSON.parse((await get(readJwks)).text) as { keys: JWK[] };
    for (let i = 0; i < 2; i++) {
      const card = JSON.parse((await get(readCard)).text);
      const [signature] = card.signatures;
      const verified = flattenedVerify(
        { protected: signature.protected, signature: signature.signature, payload: Buffer.from(signingPayload(card)).toString("base64url") },
        await importJWK(keys[0]!, "EdDSA"),
      );
      await expect(verified).resolves.toBeTruthy();
    }
  });

  it("answers 304 with no body to If-None-Match on a document and on the directory, and 200 once the directory changes", async () => {
    for (const door of [readLlms, readOpenApi, readPeers]) {
      const full = await get(door);
      const tag = full.headers.get("etag")!;
      const again = await get(door, { "if-none-match": `W/${tag}, "other"` });
      expect(again.status, door.name).toBe(304);
      expect(again.text).toBe("");
      expect(again.headers.get("etag")).toBe(tag);
    }
    const before = await get(readPeers);
    await admit();
    const after = await get(readPeers, { "if-none-match": before.headers.get("etag")! });
    expect(after.status).toBe(200);
    expect(after.headers.get("etag")).not.toBe(before.headers.get("etag"));
  });

  it("sends the agent card with Last-Modified, the moment this instance built it, the same on every answer, and answers If-Modified-Since", async () => {
    const first = await get(readAgentCard);
    const stamp = first.headers.get("last-modified")!;
    expect(stamp).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    // Built by this first answer (or an earlier one of this file), never later than now.
    expect(Date.parse(stamp)).toBeLessThanOrEqual(Date.now());
    await new Promise((r) => setTimeout(r, 1100));
    const second = await get(readAgentCard);
    expect(second.headers.get("last-modified")).toBe(stamp);

    const since = await get(readAgentCard, { "if-modified-since": stamp });
    expect(since.status).toBe(304);
    expect(since.text).toBe("");
    expect(since.headers.get("last-modified")).toBe(stamp);
    expect(since.headers.get("etag")).toBe(first.headers.get("etag"));
    // Older than the card: the whole card. Not a date: ignored. With If-None-Match, only the tag counts.
    expect((await get(readAgentCard, { "if-modified-since": new Date(Date.parse(stamp) - 1000).toUTCString() })).status).toBe(200);
    expect((await get(readAgentCard, { "if-modified-since": "yesterday" })).status).toBe(200);
    expect((await get(readAgentCard, { "if-modified-since": stamp, "if-none-match": '"another"' })).status).toBe(200);
  });
});
