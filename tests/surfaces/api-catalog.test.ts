import { beforeAll, expect, it } from "vitest";
import { useDatabase } from "@/lib/city/database";
import { env } from "@/lib/env";
import { API_CATALOG_PATH, readApiCatalog } from "@/lib/doors/surfaces/api-catalog";
import { readCard } from "@/lib/doors/surfaces/discovery";
import { serveDoor } from "@/lib/doors/pipeline/http";
import { registry } from "@/lib/doors/registry";
import type { AnyDoor } from "@/lib/doors/door";
import { describeOnDatabases } from "../support/databases";
import { linksetProblems, linksetTargets } from "../support/linkset";

const BASE = "http://city.test";

async function get(door: AnyDoor, path = door.path) {
  const response = await serveDoor(door, new Request(`${BASE}${path}`));
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** The public GET door that serves a path of this city (its own path, not an alias). */
function doorAt(path: string): AnyDoor | undefined {
  return registry.find((d) => d.method === "GET" && d.auth === "none" && d.path === path);
}

it("knows a linkset from what is not one (the checker these tests lean on)", () => {
  const target = { href: "https://city.test/openapi.json", type: "application/json" };
  expect(linksetProblems({ linkset: [{ anchor: "https://city.test/", "service-desc": [target] }] })).toEqual([]);
  expect(linksetProblems({ linkset: [{ anchor: "https://city.test/", "service-desc": [target] }], now_utc: "x" })).not.toEqual([]);
  expect(linksetProblems({ linkset: [] })).not.toEqual([]);
  expect(linksetProblems({ linkset: [{ anchor: "/relative", "service-desc": [target] }] })).not.toEqual([]);
  expect(linksetProblems({ linkset: [{ anchor: "https://city.test/", "service-desc": target }] })).not.toEqual([]);
  expect(linksetProblems({ linkset: [{ anchor: "https://city.test/", "service-desc": [{ type: "application/json" }] }] })).not.toEqual([]);
  expect(linksetProblems({ linkset: [{ anchor: "https://city.test/", "Service Desc": [target] }] })).not.toEqual([]);
  expect(linksetProblems({ linkset: [{ anchor: "https://city.test/", "service-desc": [{ ...target, title: 3 }] }] })).not.toEqual([]);
});

describeOnDatabases("the API catalog (RFC 9727)", (t) => {
  beforeAll(() => useDatabase(t().db));

  it("is an RFC 9264 linkset, application/linkset+json with the RFC 9727 profile, naming itself in Link", async () => {
    const answer = await get(readApiCatalog);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe('application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"');
    expect(answer.headers.get("link")).toBe(`<${env().CITY_BASE_URL}${API_CATALOG_PATH}>; rel="api-catalog"`);
    expect(answer.headers.get("etag")).toMatch(/^"/);
    expect(linksetProblems(JSON.parse(answer.text))).toEqual([]);
  });

  it("names every surface: the JSON doors by /openapi.json and /llms.txt, the MCP door, the A2A card, the city card and both logs' checkpoints", async () => {
    const catalog = JSON.parse((await get(readApiCatalog)).text) as { linkset: Record<string, unknown>[] };
    const base = env().CITY_BASE_URL;
    const targets = linksetTargets(catalog);
    const named = (rel: string, path: string) => targets.some((x) => x.rel === rel && x.href === `${base}${path}`);
    expect(catalog.linkset.map((c) => c.anchor)).toEqual([
      `${base}/`,
      `${base}/mcp`,
      `${base}/api/a2a`,
      `${base}/api/residency/log`,
      `${base}/api/identity/log`,
    ]);
    expect(named("service-desc", "/openapi.json")).toBe(true);
    expect(named("service-doc", "/llms.txt")).toBe(true);
    expect(named("service-desc", "/.well-known/agent-card.json")).toBe(true);
    expect(named("describedby", "/city-card.json")).toBe(true);
    // The logs as the city card lists them.
    const card = JSON.parse((await get(readCard)).text) as { log: { checkpoint: string }; identity_log: { checkpoint: string } };
    expect(named("status", card.log.checkpoint)).toBe(true);
    expect(named("status", card.identity_log.checkpoint)).toBe(true);
  });

  it("names only public documents that answer 200, each in the media type it declares", async () => {
    const catalog = JSON.parse((await get(readApiCatalog)).text) as { linkset: Record<string, unknown>[] };
    const hrefs = [...new Set(linksetTargets(catalog).map((x) => `${x.href}|${x.type}`))];
    expect(hrefs.length).toBeGreaterThan(6);
    for (const entry of hrefs) {
      const [href, type] = entry.split("|") as [string, string];
      const path = new URL(href).pathname;
      const door = doorAt(path);
      expect(door, `${href} is a public GET door`).toBeDefined();
      const answer = await get(door!, path);
      expect(answer.status, href).toBe(200);
      expect(answer.headers.get("content-type")?.split(";")[0], href).toBe(type);
    }
  });
});
