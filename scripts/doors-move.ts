/**
 * lib/doors/ by role (issue 46): moves each flat file of lib/doors/ into its role's folder and
 * rewrites every import of the repository, and every path mention, to the new places.
 *
 *   pipeline/       the way every request takes, whichever surface it came by
 *   declarations/   the door declarations and their helpers, a folder per capability of lib/city/
 *   surfaces/       what is generated from the registry: OpenAPI, llms.txt, MCP, A2A, discovery
 *   (the top)       the declaration contract (door.ts), the registry and the shared schemas
 *
 *   npx tsx scripts/doors-move.ts
 *
 * Re-runnable, like scripts/house-move.ts (whose machinery, scripts/house/kit.ts, it shares): run
 * it again on main after other branches merged. A file at the top of lib/doors/ that is not in
 * PLACE below stops it before anything moves; a declarations/ folder that is no capability of
 * lib/city/ stops it too. Imports of the flat layout (`@/lib/doors/http`, a moved file's `./door`)
 * are rewritten wherever they are; a second run on a moved tree changes nothing. A module is
 * imported as `./name` from its own folder and as `@/lib/doors/...` from anywhere else.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { codeFiles, formatFiles, gitMoves, ROOT, rewriteMentions, stop, walk } from "./house/kit";

const DOORS = "lib/doors";
const SELF = "scripts/doors-move.ts";

/** Each flat file of lib/doors/ (name without .ts) and its folder under lib/doors/; "" stays at the top. */
const PLACE: Record<string, string> = {
  // The top: what a declaration is, the list of them, the schemas many share.
  door: "",
  registry: "",
  schemas: "",
  // The pipeline.
  http: "pipeline",
  invoke: "pipeline",
  caller: "pipeline",
  signature: "pipeline",
  "read-cache": "pipeline",
  "constant-documents": "pipeline",
  etag: "pipeline",
  cors: "pipeline",
  "client-address": "pipeline",
  "own-hosts": "pipeline",
  // The surfaces, and the doors that serve them (built from the registry).
  openapi: "surfaces",
  llms: "surfaces",
  mcp: "surfaces",
  "a2a-server": "surfaces",
  "a2a-card": "surfaces",
  a2a: "surfaces",
  discovery: "surfaces",
  "api-catalog": "surfaces",
  // The declarations: helpers every declaration may use, then a folder per capability of lib/city/.
  paging: "declarations",
  "query-int": "declarations",
  "configured-limits": "declarations/bounds",
  "rate-windows": "declarations/bounds",
  "gate-pow": "declarations/challenge",
  "gate-shares": "declarations/challenge",
  gate: "declarations/gate",
  keys: "declarations/keys",
  recover: "declarations/keys",
  tokens: "declarations/keys",
  peers: "declarations/directory",
  origin: "declarations/origin",
  residency: "declarations/residency",
  live: "declarations/live",
  locker: "declarations/shelves",
  lots: "declarations/shelves",
  vault: "declarations/shelves",
  seals: "declarations/shelves",
  checkpoints: "declarations/shelves",
  mail: "declarations/mail",
  posts: "declarations/posts",
  lanterns: "declarations/posts",
  quarantine: "declarations/quarantine",
  parking: "declarations/quarantine",
  tiers: "declarations/restriction",
  ward: "declarations/ward",
  clinic: "declarations/clinic",
  "transparency-log": "declarations/logs/transparency-log",
  "residency-log": "declarations/logs/residency-log",
  "identity-log": "declarations/logs/identity-log",
};
const ROLES = new Set(["pipeline", "declarations", "surfaces"]);

function fail(message: string): never {
  return stop("doors-move", message);
}

/** The module (path without .ts) a flat name lives at in the new layout. */
const placeOf = (base: string) => (PLACE[base] ? `${DOORS}/${PLACE[base]}/${base}` : `${DOORS}/${base}`);

function checkTable(): Array<{ from: string; to: string }> {
  const moves: Array<{ from: string; to: string }> = [];
  for (const name of readdirSync(path.join(ROOT, DOORS)).sort()) {
    const rel = `${DOORS}/${name}`;
    if (statSync(path.join(ROOT, rel)).isDirectory()) {
      if (!ROLES.has(name)) fail(`${rel}/ is a folder of lib/doors/ that scripts/doors-move.ts does not know: the roles are ${[...ROLES].join(", ")}.`);
      continue;
    }
    const base = name.replace(/\.ts$/, "");
    if (!name.endsWith(".ts") || !(base in PLACE))
      fail(`${rel} is a file at the top of lib/doors/ that scripts/doors-move.ts does not know: add it to PLACE with its role.`);
    if (PLACE[base]) moves.push({ from: rel, to: `${placeOf(base)}.ts` });
  }
  // A file of the table already moved, but to another place than the table's: say so rather than guess.
  // (pipeline/stages/ holds a file per stage, named as the stage: the `caller` stage beside caller.ts.)
  for (const f of walk(DOORS).filter((x) => x.endsWith(".ts") && x.split("/").length > 3 && !x.startsWith(`${DOORS}/pipeline/stages/`))) {
    const base = path.posix.basename(f, ".ts");
    if (base in PLACE && `${placeOf(base)}.ts` !== f) fail(`${f} is not where PLACE puts it (${placeOf(base)}.ts).`);
  }
  // The declarations mirror lib/city/: each capability folder of theirs is one of the city's.
  for (const folder of new Set(Object.values(PLACE).filter((p) => p.startsWith("declarations/")))) {
    const capability = `lib/city/${folder.slice("declarations/".length)}`;
    if (!existsSync(path.join(ROOT, capability, "index.ts"))) fail(`${DOORS}/${folder}/ mirrors no capability of lib/city/ (${capability}/index.ts).`);
  }
  return moves;
}

const oldPathOf = new Map<string, string>();

/** The module (path without .ts) a specifier written in `importer` names literally; null for a package. */
function literalOf(importer: string, spec: string): string | null {
  let mod: string;
  if (spec.startsWith("@/")) mod = spec.slice(2);
  else if (spec.startsWith(".")) mod = path.posix.normalize(path.posix.join(path.posix.dirname(oldPathOf.get(importer) ?? importer), spec));
  else return null;
  return mod.replace(/\.ts$/, "").replace(/\/$/, "");
}

/** Where a module of the flat layout went; any other module is where it was. */
function movedTo(mod: string): string {
  const flat = mod.startsWith(`${DOORS}/`) ? mod.slice(DOORS.length + 1) : null;
  return flat !== null && !flat.includes("/") && flat in PLACE ? placeOf(flat) : mod;
}

/**
 * The specifier rewritten when it names a module that moved, or when the file that holds it moved
 * and wrote it relative to its old place: `./name` from the module's own folder, else from the
 * root (`@/lib/doors/...`); a relative import out of lib/doors/ (none today) stays relative.
 */
function rewriteSpec(importer: string, spec: string): string {
  const literal = literalOf(importer, spec);
  if (!literal) return spec;
  const mod = movedTo(literal);
  const relativeFromOldPlace = spec.startsWith(".") && oldPathOf.has(importer);
  if (mod === literal && !relativeFromOldPlace) return spec;
  if (!mod.startsWith(`${DOORS}/`)) {
    const rel = path.posix.relative(path.posix.dirname(importer), mod);
    return rel.startsWith(".") ? rel : `./${rel}`;
  }
  return path.posix.dirname(importer) === path.posix.dirname(mod) ? `./${path.posix.basename(mod)}` : `@/${mod}`;
}

// import ... from "x"; export ... from "x"; import("x"); import "x"; vi.mock("x") / vi.doMock("x")
const SPECIFIERS = /(\bfrom\s*"|\bimport\(\s*"|^import\s+"|\bvi\.(?:do)?mock\(\s*")([^"]+)"/gm;

async function main(): Promise<void> {
  const moves = checkTable();
  for (const f of codeFiles().filter((x) => x !== SELF)) {
    const text = readFileSync(path.join(ROOT, f), "utf8");
    if (/\brequire\(\s*"[^"]*lib\/doors/.test(text)) fail(`${f}: a require() of the doors; this script rewrites only import specifiers.`);
  }
  gitMoves(moves, oldPathOf);
  if (moves.length) console.log(`moved ${moves.length}: ${moves.map((m) => `${m.from} -> ${m.to}`).join(", ")}`);

  const changed: string[] = [];
  for (const f of codeFiles().filter((x) => x !== SELF)) {
    const text = readFileSync(path.join(ROOT, f), "utf8");
    const out = text.replace(SPECIFIERS, (whole, lead: string, spec: string) => {
      const next = rewriteSpec(f, spec);
      return next === spec ? whole : `${lead}${next}"`;
    });
    if (out !== text) {
      writeFileSync(path.join(ROOT, f), out);
      changed.push(f);
    }
  }
  console.log(`imports rewritten in ${changed.length} files`);

  const pairs: Array<[RegExp, string]> = Object.entries(PLACE)
    .filter(([, place]) => place)
    .map(([base, place]) => [new RegExp(`(?<![\\w/-])lib/doors/${base.replace(/-/g, "\\-")}\\.ts\\b`, "g"), `lib/doors/${place}/${base}.ts`]);
  changed.push(...rewriteMentions(pairs, [SELF]));
  await formatFiles(changed);

  const files = walk(DOORS).filter((f) => f.endsWith(".ts"));
  const perFolder = new Map<string, number>();
  for (const f of files) perFolder.set(path.posix.dirname(f), (perFolder.get(path.posix.dirname(f)) ?? 0) + 1);
  console.log(`files under lib/doors: ${files.length}`);
  for (const [d, n] of [...perFolder].sort()) console.log(`  ${String(n).padStart(3)}  ${d}/`);
}

void main();
