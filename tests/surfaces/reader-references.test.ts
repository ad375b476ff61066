import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { registry } from "@/lib/doors/registry";
import { buildOpenApi } from "@/lib/doors/surfaces/openapi";

/*
 * What a reader of the repository or of the city's published documents is shown never points at
 * the team's issue tracker ("issue 43"): nobody outside can open it. A reason is said in words.
 */
const ISSUE_REFERENCE = /\bissues? #?\d+\b/i;

const root = process.cwd();
const pages = [
  "README.md",
  "SECURITY.md",
  "BENCHMARKS.md",
  ...readdirSync(path.join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

describe("no reference a reader cannot follow", () => {
  it.each(pages)("%s names no issue number", (page) => {
    const lines = readFileSync(path.join(root, page), "utf8").split("\n");
    expect(lines.filter((line) => ISSUE_REFERENCE.test(line))).toEqual([]);
  });

  it("the OpenAPI document names no issue number", () => {
    const text = JSON.stringify(buildOpenApi(registry, "http://127.0.0.1:3000"));
    expect(text.match(new RegExp(`.{0,60}${ISSUE_REFERENCE.source}.{0,20}`, "gi")) ?? []).toEqual([]);
  });

  it("the pattern finds what it must", () => {
    expect(ISSUE_REFERENCE.test("the reserve (issue 43, item 4)")).toBe(true);
    expect(ISSUE_REFERENCE.test("see issues #12")).toBe(true);
    expect(ISSUE_REFERENCE.test("an issue of the log")).toBe(false);
  });
});
