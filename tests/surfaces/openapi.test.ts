import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { doorPaths } from "@/lib/doors/door";
import { buildOpenApi } from "@/lib/doors/surfaces/openapi";
import { registry } from "@/lib/doors/registry";

type Operation = { operationId: string; "x-city-alias-of"?: string };
type Doc = { paths: Record<string, Record<string, Operation>> };

const APP = path.join(process.cwd(), "app");
// JSON-RPC (MCP) and the catch-all 404 are not JSON doors: OpenAPI does not describe them.
const NOT_DOORS = new Set(["/mcp", "/api/mcp", "/api/[...unknown]"]);

/** Every route file under app/ as the URL path it answers, `[param]` written `{param}`. */
function routePaths(dir = APP): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return routePaths(full);
    if (entry.name !== "route.ts") return [];
    const segments = path
      .relative(APP, dir)
      .split(path.sep)
      .filter((s) => !/^\(.+\)$/.test(s));
    return ["/" + segments.join("/")];
  });
}

describe("OpenAPI lists every path an agent can call", () => {
  const doc = buildOpenApi(registry, "https://city.test") as unknown as Doc;

  it("has an operation for every method of every route file, aliases included", async () => {
    const routes = routePaths().filter((p) => !NOT_DOORS.has(p));
    expect(routes.length).toBeGreaterThan(30);
    for (const route of routes) {
      const mod = (await import(path.join(APP, ...route.split("/").filter(Boolean), "route.ts"))) as Record<string, { door?: unknown }>;
      // A method served by a door (the others answer 405 method_not_allowed).
      const methods = Object.keys(mod).filter((m) => mod[m]?.door);
      expect(methods.length, route).toBeGreaterThan(0);
      const openApiPath = route.replace(/\[(?:\.\.\.)?([a-z0-9_]+)\]/g, "{$1}");
      for (const method of methods) expect(doc.paths[openApiPath]?.[method.toLowerCase()], `${method} ${openApiPath}`).toBeDefined();
    }
  });

  it("names the aliases the city serves today, each pointing at its canonical path", () => {
    expect(doc.paths["/api/residency"]?.get?.["x-city-alias-of"]).toBe("/residency");
    expect(doc.paths["/api/gate"]?.get?.["x-city-alias-of"]).toBe("/gate");
    expect(doc.paths["/api/gate"]?.post?.["x-city-alias-of"]).toBe("/gate");
    expect(doc.paths["/peers.json"]?.get?.["x-city-alias-of"]).toBe("/api/peers");
    expect(doc.paths["/gate"]?.post?.["x-city-alias-of"]).toBeUndefined();
  });

  it("gives each path and alias of each door one operation with a unique operationId, and stays valid", async () => {
    const ops = Object.entries(doc.paths).flatMap(([p, item]) => Object.entries(item).map(([m, op]) => ({ route: `${m.toUpperCase()} ${p}`, op })));
    expect(ops.map((o) => o.route).sort()).toEqual(registry.flatMap((d) => doorPaths(d).map((p) => `${d.method} ${p}`)).sort());
    const ids = ops.map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths["/peers.json"]?.get?.operationId).toBe("list-peers--peers-json");
    expect((await new Validator().validate(doc as never)).valid).toBe(true);
  });

  it("names the repository's license, Apache-2.0, as package.json and LICENSE do", () => {
    const info = (doc as unknown as { info: { license?: { name: string; identifier?: string; url?: string } } }).info;
    expect(info.license).toEqual({ name: "Apache License 2.0", identifier: "Apache-2.0" });
    const pkg = JSON.parse(readFileSync(path.join(process.cwd(), "package.json"), "utf8")) as { license?: string };
    expect(pkg.license).toBe(info.license!.identifier);
    const text = readFileSync(path.join(process.cwd(), "LICENSE"), "utf8");
    expect(text).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004\s/);
    expect(text).toContain("END OF TERMS AND CONDITIONS");
  });
});
