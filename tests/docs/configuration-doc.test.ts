import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ENV_VARIABLES } from "@/lib/env";

const DOC = readFileSync(path.join(process.cwd(), "docs", "configuration.md"), "utf8");

/**
 * The names in the first column of the configuration table. A placeholder name
 * (`CITY_STORE_<STORE>_BYTES`) stands for each value the rows with that placeholder name in backticks.
 */
function documented(): { names: Set<string>; placeholders: { pattern: RegExp; placeholder: string }[]; values: Map<string, Set<string>> } {
  const names = new Set<string>();
  const placeholders: { pattern: RegExp; placeholder: string }[] = [];
  const values = new Map<string, Set<string>>();
  for (const line of DOC.split("\n")) {
    const cells = line.split(" | ");
    if (!line.startsWith("| `") || cells.length < 3) continue;
    for (const [, name] of cells[0]!.matchAll(/`([A-Z0-9_<>]+)`/g)) {
      const placeholder = /<[A-Z]+>/.exec(name!)?.[0];
      if (!placeholder) {
        names.add(name!);
        continue;
      }
      placeholders.push({ pattern: new RegExp(`^${name!.replace(placeholder, "([A-Z0-9_]+)")}$`), placeholder });
      const named = values.get(placeholder) ?? new Set<string>();
      for (const [, value] of line.matchAll(/`([A-Z0-9_]+)`/g)) named.add(value!);
      values.set(placeholder, named);
    }
  }
  return { names, placeholders, values };
}

function isDocumented(variable: string): boolean {
  const { names, placeholders, values } = documented();
  if (names.has(variable)) return true;
  return placeholders.some(({ pattern, placeholder }) => {
    const part = pattern.exec(variable)?.[1];
    return part !== undefined && values.get(placeholder)!.has(part);
  });
}

describe("docs/configuration.md", () => {
  it("lists every environment variable lib/env.ts reads", () => {
    expect(ENV_VARIABLES.length).toBeGreaterThan(40);
    expect(ENV_VARIABLES.filter((variable) => !isDocumented(variable))).toEqual([]);
  });

  it("lists no variable in its table that the city does not read (CITY_ACCESS_LOG is read by the logger)", () => {
    const read = new Set([...ENV_VARIABLES, "CITY_ACCESS_LOG"]);
    expect([...documented().names].filter((name) => !read.has(name))).toEqual([]);
  });
});
