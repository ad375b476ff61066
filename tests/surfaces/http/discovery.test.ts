import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { registry } from "@/lib/doors/registry";
import { ProblemSchema } from "@/lib/errors";
import { baseUrl, call, getJson } from "../../support/http";
import { linksetProblems, linksetTargets } from "../../support/linkset";

describe("discovery doors over HTTP", () => {
  it("serves ai.json with exactly the spec's eight fields and constants", async () => {
    const { response, body } = await getJson("/.well-known/ai.json");
    expect(response.status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(["card", "cite", "contact", "description", "llms", "name", "preferred", "schema"]);
    expect(body).toMatchObject({
      schema: `${baseUrl()}/schemas/ai-discovery/1.json`,
      name: "CITY",
      llms: "/llms.txt",
      card: "/city-card.json",
      contact: "/contact",
    });
    expect(typeof body.description).toBe("string");
    const census = (await getJson("/city.json")).body;
    expect(body.cite).toBe(census.cite);
  });

  it("lists in `preferred` only doors that answer 200", async () => {
    const { body } = await getJson<{ preferred: string[] }>("/.well-known/ai.json");
    expect(body.preferred.length).toBeGreaterThan(0);
    for (const path of body.preferred) expect((await call(path)).status, path).toBe(200);
  });

  it("serves the discovery schema its `schema` field names, and ai.json validates against it", async () => {
    const { body: doc } = await getJson<{ schema: string }>("/.well-known/ai.json");
    const { response, body: schema } = await getJson<{ $id: string; required: string[]; additionalProperties: boolean }>(new URL(doc.schema).pathname);
    expect(response.status).toBe(200);
    expect(schema.$id).toBe(doc.schema);
    expect(schema.required.sort()).toEqual(Object.keys(doc).sort());
    expect(schema.additionalProperties).toBe(false);
  });

  it("puts now_utc first in every JSON reading door but ai.json, OpenAPI and the schema", async () => {
    // ai.json, the API catalog (an RFC 9264 linkset), the agent card (A2A) and the JWK Set (RFC 7517) have shapes of their own.
    const exempt = new Set([
      "/.well-known/ai.json",
      "/.well-known/api-catalog",
      "/openapi.json",
      "/schemas/ai-discovery/1.json",
      "/.well-known/agent-card.json",
      "/.well-known/jwks.json",
    ]);
    // Doors that need a parameter (a log proof names its row) are read with one elsewhere (reads.test.ts).
    const needsNothing = (x: (typeof registry)[number]) => x.input.safeParse({}).success;
    for (const d of registry.filter(
      (x) => x.method === "GET" && x.auth === "none" && (x.produces ?? "json") === "json" && !x.path.includes("{") && needsNothing(x),
    )) {
      const response = await call(d.path);
      expect(response.status, d.path).toBe(200);
      const text = await response.text();
      if (exempt.has(d.path)) continue;
      expect(text.startsWith('{"now_utc":"'), d.path).toBe(true);
      const now = JSON.parse(text).now_utc as string;
      expect(Math.abs(Date.parse(now) - Date.now())).toBeLessThan(60_000);
    }
  });

  it("serves the API catalog (RFC 9727) as an RFC 9264 linkset whose every target answers 200 in its declared type, and names it to a HEAD", async () => {
    const response = await call("/.well-known/api-catalog");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe('application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"');
    const catalog = (await response.json()) as { linkset: Record<string, unknown>[] };
    expect(linksetProblems(catalog)).toEqual([]);
    const targets = linksetTargets(catalog);
    expect(catalog.linkset.map((c) => c.anchor)).toContain(`${baseUrl()}/mcp`);
    for (const { href, type } of targets) {
      expect(new URL(href).origin, href).toBe(baseUrl());
      const answer = await fetch(href);
      expect(answer.status, href).toBe(200);
      expect(answer.headers.get("content-type")?.split(";")[0], href).toBe(type);
    }
    // RFC 9727 section 2: a HEAD answers with a Link to the catalog, relation api-catalog.
    const head = await call("/.well-known/api-catalog", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("link")).toBe(`<${baseUrl()}/.well-known/api-catalog>; rel="api-catalog"`);
    expect(await head.text()).toBe("");
  });

  it("sends cache headers: documents for a minute, live readings never", async () => {
    expect((await call("/llms.txt")).headers.get("cache-control")).toContain("max-age=60");
    expect((await call("/city.json")).headers.get("cache-control")).toBe("public, max-age=0, s-maxage=5, stale-while-revalidate=5");
    expect((await call("/beacon.json")).headers.get("cache-control")).toBe("public, max-age=0, s-maxage=5, stale-while-revalidate=5");
  });

  it("serves a valid OpenAPI 3.1 document and an llms.txt that list the same doors", async () => {
    const { body: doc } = await getJson<{
      servers: { url: string }[];
      paths: Record<string, Record<string, { operationId: string; "x-city-alias-of"?: string }>>;
    }>("/openapi.json");
    const result = await new Validator().validate(doc as never);
    expect(result.valid).toBe(true);
    expect(doc.servers[0]!.url).toBe(baseUrl());
    const ops = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([, op]) => !op["x-city-alias-of"])
        .map(([m]) => `${m.toUpperCase()} ${path}`),
    );
    const llms = await (await call("/llms.txt")).text();
    expect((await call("/llms.txt")).headers.get("content-type")).toBe("text/plain; charset=utf-8");
    const listed = [...llms.matchAll(/^- \[([A-Z]+ \S+)\]/gm)].map((m) => m[1]);
    expect(listed.sort()).toEqual(ops.sort());
    expect(ops.sort()).toEqual(registry.map((d) => `${d.method} ${d.path}`).sort());
  });

  it("counts an empty city as zeros with fakeTide 0", async () => {
    const { body } = await getJson("/city.json");
    expect(body).toMatchObject({ occupancy: 0, citizens: 0, house: 0, outside: 0, hotelGuests: 0, lotsOccupied: 0, fakeTide: 0 });
    expect(body.quotedAt).toBe(body.now_utc);
  });

  it("publishes the operator contact from CITY_CONTACT", async () => {
    const { body } = await getJson("/contact");
    expect(body.contact).toBe("operator@city.test");
  });

  it("answers an A2A-style agent card with one skill per door", async () => {
    const { body } = await getJson<{ skills: { id: string }[]; supportedInterfaces: unknown[] }>("/.well-known/agent-card.json");
    expect(body.skills.map((s) => s.id).sort()).toEqual(registry.map((d) => d.name).sort());
  });
});

describe("problem answers over HTTP", () => {
  it("answers an unknown /api/ path with a 404 problem document, not HTML", async () => {
    for (const method of ["GET", "POST", "DELETE"]) {
      const response = await call("/api/no-such-door/deeper", { method });
      expect(response.status).toBe(404);
      expect(response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(ProblemSchema.parse(await response.json())).toMatchObject({ code: "not_found", status: 404, instance: "/api/no-such-door/deeper" });
    }
  });

  it("answers a method a door does not serve with a 405 problem", async () => {
    const response = await call("/city.json", { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET");
    expect(ProblemSchema.parse(await response.json()).code).toBe("method_not_allowed");
  });
});
