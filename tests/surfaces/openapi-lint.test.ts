import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { type AnyDoor, doorPaths } from "@/lib/doors/door";
import { buildOpenApi, declaredProblems } from "@/lib/doors/surfaces/openapi";
import { registry } from "@/lib/doors/registry";
import { ERROR_CODES } from "@/lib/errors";

type Response = { content?: Record<string, { schema?: { $ref?: string } }> };
type Operation = { operationId: string; security?: unknown[]; responses: Record<string, Response>; requestBody?: { required?: boolean } };
type Doc = { paths: Record<string, Record<string, Operation>> };

const ROOT = process.cwd();
const CLI = path.join(ROOT, "node_modules", "@redocly", "cli", "bin", "cli.js");
// The CLI's own run time (a few seconds; more on a loaded machine): a limit for a hung process, not a budget.
const CLI_MS = 180_000;

const doc = buildOpenApi(registry, "http://127.0.0.1:3000") as unknown as Doc;
const operations = registry.flatMap((door) =>
  doorPaths(door).map((p) => ({ door, route: `${door.method} ${p}`, op: doc.paths[p]![door.method.toLowerCase()]! })),
);

/** A public GET that takes nothing: the constant documents and counts, which answer no 4xx at all. */
function answersNo4xx(door: AnyDoor): boolean {
  return door.method === "GET" && door.auth === "none" && declaredProblems(door).every((code) => ERROR_CODES[code].status >= 500);
}

describe("the OpenAPI document passes Redocly's lint (recommended ruleset, redocly.yaml)", () => {
  it(
    "with no error and no warning",
    () => {
      const dir = mkdtempSync(path.join(tmpdir(), "city-openapi-lint-"));
      try {
        const file = path.join(dir, "openapi.json");
        writeFileSync(file, JSON.stringify(doc, null, 2));
        const run = spawnSync(process.execPath, [CLI, "lint", file, "--config", path.join(ROOT, "redocly.yaml"), "--format=json"], {
          encoding: "utf8",
          env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
          timeout: CLI_MS,
        });
        expect(run.error, "the CLI ran").toBeUndefined();
        const report = JSON.parse(run.stdout) as {
          totals: Record<string, number>;
          problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
        };
        const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`);
        expect(problems).toEqual([]);
        expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
        expect(run.status).toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    CLI_MS + 10_000,
  );

  it("declares a 4xx on every operation whose door can answer one (redocly.yaml's stand-in for operation-4xx-response)", () => {
    const without = operations.filter(({ op }) => !Object.keys(op.responses).some((status) => /^4\d\d$/.test(status)));
    for (const { door, route } of without) expect(answersNo4xx(door), `${route} declares no 4xx`).toBe(true);
    // The exception stays what redocly.yaml says it is: the public documents and counts that take nothing.
    expect(without.map((o) => o.route).sort()).toEqual(
      operations
        .filter((o) => answersNo4xx(o.door))
        .map((o) => o.route)
        .sort(),
    );
    expect(without.length).toBeLessThan(20);
    // redocly.yaml counts those doors in words: the count it gives is the registry's.
    const doors = new Set(without.map((o) => o.door.name));
    const said = /Off, with a check of our own in its place: (\d+) public GET doors that take no input/.exec(
      readFileSync(path.join(ROOT, "redocly.yaml"), "utf8"),
    );
    expect(Number(said?.[1]), "the count of input-less public GET doors in redocly.yaml").toBe(doors.size);
  });

  it("declares each problem a door's declaration makes certain, as a Problem document under its status", () => {
    for (const { door, route, op } of operations) {
      for (const code of declaredProblems(door)) {
        const response = op.responses[String(ERROR_CODES[code].status)];
        expect(response?.content?.["application/problem+json"]?.schema?.$ref, `${route} ${code}`).toBe("#/components/schemas/Problem");
        expect((response as { description?: string }).description, `${route} ${code}`).toContain(`${code}:`);
      }
    }
    const gate = doc.paths["/gate"]!.post!;
    expect(Object.keys(gate.responses)).toEqual(expect.arrayContaining(["400", "413", "415"]));
    // The gate answers verdicts, never a 401 (a stale credential is filtered).
    expect(gate.responses["401"]).toBeUndefined();
    expect(Object.keys(doc.paths["/api/locker"]!.post!.responses)).toEqual(expect.arrayContaining(["400", "401", "403", "409", "413", "415", "429", "507"]));
    expect(Object.keys(doc.paths["/api/operator/appeals"]!.get!.responses)).toEqual(expect.arrayContaining(["401", "403"]));
    expect(Object.keys(doc.paths["/llms.txt"]!.get!.responses).filter((s) => s.startsWith("4"))).toEqual([]);
  });

  it("marks public operations `security: []` and a body required where an empty body is refused", () => {
    for (const { door, route, op } of operations) if (door.auth === "none") expect(op.security, route).toEqual([]);
    // An empty POST /gate is a 400: its body is one of the gate's shapes.
    expect(doc.paths["/gate"]!.post!.requestBody?.required).toBe(true);
    expect(doc.paths["/api/rooms/{room}"]!.post!.requestBody?.required).toBe(true);
    // Doors that take an empty body (`{}` is a whole request) say it is optional.
    expect(doc.paths["/api/live"]!.post!.requestBody?.required).toBe(false);
    expect(doc.paths["/api/residency/export"]!.post!.requestBody?.required).toBe(false);
  });
});
