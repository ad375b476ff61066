import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * docs/architecture.md's code map cannot drift: every room on disk is in it, every room it names
 * exists, and its rules are the rule file's (.dependency-cruiser.cjs), name and why, all of them.
 */
const root = process.cwd();
const doc = readFileSync(path.join(root, "docs/architecture.md"), "utf8");
const rules = (createRequire(import.meta.url)(path.join(root, ".dependency-cruiser.cjs")) as { forbidden: Array<{ name: string; comment: string }> }).forbidden;
const map = doc.slice(doc.indexOf("## The code map"), doc.indexOf("### The rules"));
const named = [...map.matchAll(/^\| (.+?) \|/gm)].flatMap((m) => [...m[1]!.matchAll(/`([^`]+)`/g)].map((n) => n[1]!));

const dirs = (dir: string) => readdirSync(path.join(root, dir)).filter((n) => statSync(path.join(root, dir, n)).isDirectory());

describe("docs/architecture.md", () => {
  it("names every rule of the rule file with its why, and no other", () => {
    const listed = [...doc.matchAll(/^- `([a-z-]+)`: (.+)$/gm)].map((m) => ({ name: m[1]!, comment: m[2]! }));
    expect(rules.length).toBeGreaterThan(0);
    expect(listed).toEqual(rules.map((r) => ({ name: r.name, comment: r.comment })));
  });

  it("maps every room on disk: the top folders, lib/'s folders and files, the domain's folders, db/'s folders", () => {
    const rooms = [
      ...["app/api/", "app/mcp/", "app/(plat)/", "scripts/", "tests/", "public/"],
      ...dirs("lib").map((d) => `lib/${d}/`),
      ...dirs("lib/city").map((d) => `lib/city/${d}/`),
      ...readdirSync(path.join(root, "lib"))
        .filter((n) => n.endsWith(".ts"))
        .map((n) => `lib/${n}`),
      ...dirs("db").map((d) => `db/${d}/`),
    ];
    const missing = rooms.filter((room) => !named.includes(room));
    expect(missing).toEqual([]);
  });

  it("names only rooms that exist", () => {
    const plain = named.filter((n) => !n.includes("*") && !n.includes(" ") && /^[a-z(._]/.test(n) && n.includes("/"));
    expect(plain.length).toBeGreaterThan(10);
    const gone = plain.filter((n) => !existsSync(path.join(root, n)));
    expect(gone).toEqual([]);
  });
});
