import { existsSync } from "node:fs";
import path from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type AnyDoor, door, doorPaths } from "@/lib/doors/door";
import { buildLlmsTxt } from "@/lib/doors/surfaces/llms";
import { buildOpenApi } from "@/lib/doors/surfaces/openapi";
import { registry } from "@/lib/doors/registry";

const BASE = "https://city.test";

/** The route file of a door path: `{x}` is the folder `[x]`, or the catch-all `[...x]` for a parameter with slashes (a log tile). */
function routeFile(doorPath: string): string {
  const segments = doorPath.split("/").filter(Boolean);
  const file = (catchAll: boolean) =>
    path.join(process.cwd(), "app", ...segments.map((s) => s.replace(/^\{(.+)\}$/, catchAll ? "[...$1]" : "[$1]")), "route.ts");
  return existsSync(file(false)) ? file(false) : file(true);
}

describe("the door registry", () => {
  it("gives every door a unique name and every method and path one door", () => {
    const names = registry.map((d) => d.name);
    expect(new Set(names).size).toBe(names.length);
    const routesSeen = registry.flatMap((d) => doorPaths(d).map((p) => `${d.method} ${p}`));
    expect(new Set(routesSeen).size).toBe(routesSeen.length);
  });

  it("wires every path and alias of every door to a route handler for that door", async () => {
    for (const d of registry) {
      for (const p of doorPaths(d)) {
        const file = routeFile(p);
        expect(existsSync(file), `${file} is missing`).toBe(true);
        const mod = (await import(file)) as Record<string, { door?: AnyDoor }>;
        expect(mod[d.method]?.door, `${d.method} ${p} is not wired to ${d.name}`).toBe(d);
      }
    }
  });
});

describe("OpenAPI", () => {
  it("is a valid OpenAPI 3.1 document listing every door", async () => {
    const doc = buildOpenApi(registry, BASE);
    const result = await new Validator().validate(doc as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect((doc as { openapi: string }).openapi).toBe("3.1.0");
    const operationIds = Object.values(doc.paths as Record<string, Record<string, { operationId: string; "x-city-alias-of"?: string }>>).flatMap((item) =>
      Object.values(item)
        .filter((op) => !op["x-city-alias-of"])
        .map((op) => op.operationId),
    );
    expect(operationIds.sort()).toEqual(registry.map((d) => d.name).sort());
  });
});

describe("llms.txt", () => {
  it("lists every door with its method and path", () => {
    const text = buildLlmsTxt(registry, BASE);
    expect(text.startsWith("# CITY\n")).toBe(true);
    for (const d of registry) expect(text).toContain(`[${d.method} ${d.path}](${BASE}${d.path})`);
  });
});

describe("a door added to the registry", () => {
  const added = door({
    name: "ring-bell",
    method: "POST",
    path: "/api/bell/{tower}",
    summary: "Rings a bell in a tower.",
    auth: "citizen",
    limits: [{ name: "rings", limit: 5, window_seconds: 3600, per: "citizen", over: "refused" }],
    input: z.object({ tower: z.string(), times: z.number().int().min(1).max(3) }),
    output: z.object({ now_utc: z.string(), rung: z.number() }),
    run: async (ctx, input) => ({ now_utc: ctx.now.toISOString(), rung: input.times }),
  });
  const doors = [...registry, added];

  it("appears in OpenAPI with its path parameter, body, auth and limits, still valid", async () => {
    const doc = buildOpenApi(doors, BASE) as { paths: Record<string, Record<string, Record<string, unknown>>> };
    const op = doc.paths["/api/bell/{tower}"]?.post;
    expect(op?.operationId).toBe("ring-bell");
    expect(op?.parameters).toEqual([expect.objectContaining({ name: "tower", in: "path", required: true })]);
    expect(JSON.stringify(op?.requestBody)).toContain('"times"');
    expect(JSON.stringify(op?.requestBody)).not.toContain('"tower"');
    expect(op?.security).toEqual([{ citizen: [] }, { citizenSignature: [] }]);
    expect(op?.["x-city-limits"]).toEqual(added.limits);
    expect((await new Validator().validate(doc as never)).valid).toBe(true);
  });

  it("appears in llms.txt with its auth and limit", () => {
    const text = buildLlmsTxt(doors, BASE);
    expect(text).toContain(`[POST /api/bell/{tower}](${BASE}/api/bell/{tower}): Rings a bell in a tower.`);
    expect(text).toContain("5 rings per 3600 s per citizen, then refused");
  });
});
