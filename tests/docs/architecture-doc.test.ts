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
/** Every path the map writes anywhere, the capabilities' tests column included. */
const written = [...map.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

const dirs = (dir: string) => readdirSync(path.join(root, dir)).filter((n) => statSync(path.join(root, dir, n)).isDirectory());
/** Every folder of tests/ but the http/ folders inside a room (the kind, told by the tests/ row). */
const testRooms = (dir = "tests"): string[] => dirs(dir).flatMap((d) => (d === "http" && dir !== "tests" ? [] : [`${dir}/${d}/`, ...testRooms(`${dir}/${d}`)]));

describe("docs/architecture.md", () => {
  it("names every rule of the rule file with its why, and no other", () => {
    const listed = [...doc.matchAll(/^- `([a-z-]+)`: (.+)$/gm)].map((m) => ({ name: m[1]!, comment: m[2]! }));
    expect(rules.length).toBeGreaterThan(0);
    expect(listed).toEqual(rules.map((r) => ({ name: r.name, comment: r.comment })));
  });

  it("maps every room on disk: the top folders, lib/'s folders and files, the doors' and the domain's folders, db/'s folders", () => {
    const rooms = [
      ...["app/api/", "app/mcp/", "app/(plat)/", "scripts/", "tests/", "public/"],
      ...dirs("lib").map((d) => `lib/${d}/`),
      ...dirs("lib/doors").map((d) => `lib/doors/${d}/`),
      ...dirs("lib/city").map((d) => `lib/city/${d}/`),
      ...dirs("lib/city/logs").map((d) => `lib/city/logs/${d}/`),
      ...readdirSync(path.join(root, "lib"))
        .filter((n) => n.endsWith(".ts"))
        .map((n) => `lib/${n}`),
      ...dirs("db").map((d) => `db/${d}/`),
    ];
    const missing = rooms.filter((room) => !named.includes(room));
    expect(missing).toEqual([]);
  });

  it("maps every folder of tests/: a capability's in its row, every other room in the map", () => {
    const rooms = testRooms();
    expect(rooms.length).toBeGreaterThan(10);
    expect(rooms.filter((room) => !written.includes(room))).toEqual([]);
  });

  it("names every file at the top of lib/city/ in the domain's row: the few that are no one capability's", () => {
    const row = map.split("\n").find((line) => line.startsWith("| `lib/city/` |"))!;
    const top = readdirSync(path.join(root, "lib/city")).filter((n) => n.endsWith(".ts"));
    expect(top.length).toBeGreaterThan(0);
    expect(top.filter((n) => !row.includes(`\`${n}\``))).toEqual([]);
  });

  it("names only rooms that exist", () => {
    const plain = named.filter((n) => !n.includes("*") && !n.includes(" ") && /^[a-z(._]/.test(n) && n.includes("/"));
    expect(plain.length).toBeGreaterThan(10);
    const gone = plain.filter((n) => !existsSync(path.join(root, n)));
    expect(gone).toEqual([]);
  });

  describe("the capabilities", () => {
    const section = doc.slice(doc.indexOf("### The capabilities"), doc.indexOf("### The rules"));
    const rows = [...section.matchAll(/^\| `(lib\/city\/[^`]+)` \|(.+)\|$/gm)].map((m) => {
      const cells = m[2]!.split(" | ").map((c) => c.trim());
      return { folder: m[1]!, cells, uses: cells[cells.length - 1]! };
    });
    const capabilities = [
      ...dirs("lib/city")
        .filter((d) => d !== "logs")
        .map((d) => `lib/city/${d}/`),
      ...dirs("lib/city/logs").map((d) => `lib/city/logs/${d}/`),
    ];
    const files = (dir: string): string[] =>
      readdirSync(path.join(root, dir)).flatMap((n) => (statSync(path.join(root, dir, n)).isDirectory() ? files(`${dir}/${n}`) : [`${dir}/${n}`]));

    it("has one row a capability folder, each with its face", () => {
      expect(rows.map((r) => r.folder).sort()).toEqual([...capabilities].sort());
      expect(capabilities.filter((c) => !existsSync(path.join(root, c, "index.ts")))).toEqual([]);
    });

    it("names routes, doors, schema files and tests that exist (a pattern matches at least one file)", () => {
      const paths = rows.flatMap((r) => r.cells.slice(0, -1).flatMap((c) => [...c.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)));
      expect(paths.length).toBeGreaterThan(60);
      const matches = (pattern: string) => {
        if (!pattern.includes("*")) return existsSync(path.join(root, pattern));
        const dir = path.dirname(pattern);
        const name = new RegExp(`^${path.basename(pattern).replace(/\./g, "\\.").replace(/\*/g, ".*")}$`);
        return readdirSync(path.join(root, dir)).some((n) => name.test(n));
      };
      expect(paths.filter((p) => !matches(p))).toEqual([]);
    });

    it("names every door declaration and every schema file", () => {
      const declarations = files("lib/doors").filter((f) => /\bdoor\(\{/.test(readFileSync(path.join(root, f), "utf8")));
      const schema = files("db/schema").filter((f) => f.endsWith(".ts") && !f.endsWith("/index.ts"));
      expect(declarations.length).toBeGreaterThan(10);
      expect([...declarations, ...schema].filter((f) => !section.includes(`\`${f}\``))).toEqual([]);
    });

    it("keeps the door declarations in folders named as the capabilities (lib/doors/declarations/ mirrors lib/city/)", () => {
      const folders = (dir: string): string[] => dirs(dir).flatMap((d) => (d === "logs" ? folders(`${dir}/logs`) : [`${dir}/${d}/`]));
      const mirrored = folders("lib/doors/declarations").map((f) => f.replace("lib/doors/declarations/", "lib/city/"));
      expect(mirrored.length).toBeGreaterThan(10);
      expect(mirrored.filter((f) => !capabilities.includes(f))).toEqual([]);
    });

    it("names each capability's tests in the folder of its name, and its http/ folder when it has one", () => {
      const unnamed = rows.flatMap((r) => {
        const room = `tests/${r.folder.slice("lib/city/".length)}`;
        const wanted = [room, ...(existsSync(path.join(root, room, "http")) ? [`${room}http/`] : [])];
        return wanted.filter((w) => !r.cells[3]!.includes(`\`${w}\``)).map((w) => `${r.folder}: ${w}`);
      });
      expect(unnamed).toEqual([]);
    });

    it("lists in its last column the capabilities each one imports, and no other", () => {
      const nameOf = (folder: string) => folder.replace(/\/$/, "").split("/").pop()!;
      const names = new Set(rows.map((r) => nameOf(r.folder)));
      for (const row of rows) {
        const imported = new Set<string>();
        for (const f of files(row.folder.replace(/\/$/, ""))) {
          for (const m of readFileSync(path.join(root, f), "utf8").matchAll(/from "@\/lib\/city\/([a-z0-9/-]+)"/g)) {
            const name = nameOf(m[1]!);
            if (names.has(name) && name !== nameOf(row.folder)) imported.add(name);
          }
        }
        const listed = row.uses
          .split(/[,:]/)
          .map((w) => w.trim())
          .filter((w) => names.has(w));
        expect({ capability: row.folder, uses: listed.sort() }).toEqual({ capability: row.folder, uses: [...imported].sort() });
      }
    });
  });
});
