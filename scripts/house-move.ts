/**
 * The house by capability (issue 46): moves each flat file of lib/city/ into its capability's
 * folder, rewrites every import of the repository to the new paths, writes each new folder's face
 * (index.ts) and sends every import from another capability through that capability's face.
 *
 *   npx tsx scripts/house-move.ts            move, rewrite, write the faces, format
 *   npx tsx scripts/house-move.ts --report   only count: files per folder, imports across capabilities, tests per room
 *
 * Then it moves each test of the kinds layout (tests/unit/, tests/integration/, tests/http/) into
 * the room of what it tests (TEST_HOME below): tests/<capability>/ as lib/city/ names them, an
 * HTTP test in tests/<capability>/http/, and rooms of their own for what is no one capability's
 * (the request pipeline, the surfaces, db/, lib/tlog/, ...). It rewrites every specifier that named
 * a moved file, or that a moved file wrote relative to its old folder (`../support/x` stays
 * relative, `@/tests/...` stays `@/`), and every mention of a moved test's path.
 *
 * Re-runnable: it is written to be run again on main after other branches merged. A file at the
 * top of lib/city/ that is not in HOME below, or a file still in tests/unit/, tests/integration/
 * or tests/http/ that is not in TEST_HOME, stops it (exit 1, naming the file) before anything
 * moves: give the new file its capability or room here and run it again. A second run on a moved
 * tree changes nothing.
 *
 * Imports are rewritten from their module specifiers with regular expressions rather than a
 * TypeScript AST: every import of the city is a plain `import { ... } from "..."`,
 * `export { ... } from "..."` or `const { ... } = await import("...")` (anything else stops it),
 * and prettier formats what it writes.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { CODE_ROOTS, codeFiles, formatFiles, gitMoves, ROOT, rewriteFiles, rewriteMentions, SKIP, stop, walk } from "./house/kit";

const CITY = "lib/city";

/** Each flat file of lib/city/ (name without .ts) and its capability folder; "" stays at the top. */
const HOME: Record<string, string> = {
  // The top: shared helpers and the documents every capability reads.
  canonical: "",
  capabilities: "",
  census: "",
  contract: "",
  database: "",
  protocols: "",
  signing: "",
  upgrade: "",
  versions: "",
  // The bounds: rate windows and buckets, the store bounds and shares, who is a newcomer, locks.
  rate: "bounds",
  "rate-buckets": "bounds",
  "rate-stripes": "bounds",
  gcra: "bounds",
  "store-bounds": "bounds",
  "store-shares": "bounds",
  newcomers: "bounds",
  locks: "bounds",
  "gate-windows": "bounds",
  // The gate's challenge (GET /gate): nonces, proof of work, the presentation and its network;
  // below the gate and the keys, which both spend its nonces.
  "gate-nonces": "challenge",
  "nonce-mac": "challenge",
  "gate-pow": "challenge",
  pow: "challenge",
  "pow-effort": "challenge",
  "gate-prefixes": "challenge",
  "gate-presentation": "challenge",
  // The gate (POST /gate): admission and return.
  gate: "gate",
  "gate-admissions": "gate",
  "gate-content": "gate",
  "gate-controller": "gate",
  "gate-flood": "gate",
  "gate-reading": "gate",
  "gate-resume": "gate",
  // The key lifecycle.
  credentials: "keys",
  "request-keys": "keys",
  "pre-rotation": "keys",
  "public-recovery": "keys",
  recovery: "keys",
  keys: "keys",
  "key-history": "keys",
  "key-authority": "keys",
  tokens: "keys",
  proof: "keys",
  // The directory: citizens, names, search, profiles.
  directory: "directory",
  "directory-search": "directory",
  citizens: "directory",
  "citizen-profile": "directory",
  names: "directory",
  "peer-names": "directory",
  residency: "residency",
  export: "residency",
  "a2a-tasks": "a2a",
  locker: "shelves",
  lots: "shelves",
  vault: "shelves",
  seals: "shelves",
  checkpoints: "shelves",
  "shelf-guard": "shelves",
  mail: "mail",
  posts: "posts",
  lanterns: "posts",
  live: "live",
  "live-delta": "live",
  quarantine: "quarantine",
  restriction: "restriction",
  appeals: "restriction",
  ward: "ward",
  "ward-notes": "ward",
  "ward-shapes": "ward",
  clinic: "clinic",
  "clinic-desk": "clinic",
  "clinic-gauges": "clinic",
  "clinic-physicians": "clinic",
};

/** Each folder of the flat layout and where it goes (the three logs under logs/). */
const FOLDER_HOME: Record<string, string> = {
  "transparency-log": "logs/transparency-log",
  "residency-log": "logs/residency-log",
  "identity-log": "logs/identity-log",
  origin: "origin",
};

/** Folders that only group capabilities: not a capability, no face. */
const GROUPS = new Set(["logs"]);
const FACE_MARK = "// The face of this capability, written by scripts/house-move.ts";

/** The configurations at the top that import or name tests. */
const ROOT_CONFIGS = ["vitest.config.mts", "vitest.mutation.config.mts", "playwright.config.ts", "stryker.config.mjs", ".dependency-cruiser.cjs"];

const report = process.argv.includes("--report");

function fail(message: string): never {
  return stop("house-move", message);
}

const capabilityFolders = new Set([...Object.values(HOME).filter(Boolean), ...Object.values(FOLDER_HOME).map((f) => f.split("/")[0]!)]);

/** The flat layout's files still at the top, after checking every top entry is known. */
function topMoves(): Array<{ from: string; to: string }> {
  const moves: Array<{ from: string; to: string }> = [];
  for (const name of readdirSync(path.join(ROOT, CITY)).sort()) {
    const rel = `${CITY}/${name}`;
    if (statSync(path.join(ROOT, rel)).isDirectory()) {
      if (name in FOLDER_HOME) {
        if (FOLDER_HOME[name] !== name) moves.push({ from: rel, to: `${CITY}/${FOLDER_HOME[name]}` });
      } else if (!capabilityFolders.has(name)) fail(`${rel}/ is a folder of lib/city/ that scripts/house-move.ts does not know: add it to FOLDER_HOME.`);
      continue;
    }
    const base = name.replace(/\.ts$/, "");
    if (!name.endsWith(".ts") || !(base in HOME))
      fail(`${rel} is a file at the top of lib/city/ that scripts/house-move.ts does not know: add it to HOME with its capability.`);
    if (HOME[base]) moves.push({ from: rel, to: `${CITY}/${HOME[base]}/${name}` });
  }
  // A file of the table found in a folder that is not its own is a conflict: say so rather than guess.
  for (const cap of capabilityFolders) {
    const dir = path.join(ROOT, CITY, cap);
    if (!existsSync(dir) || GROUPS.has(cap)) continue;
    for (const name of readdirSync(dir).filter((n) => n.endsWith(".ts") && n !== "index.ts")) {
      const base = name.replace(/\.ts$/, "");
      if (base in HOME && HOME[base] !== cap && !(cap in FOLDER_HOME)) fail(`${CITY}/${cap}/${name} is not where HOME puts it (${HOME[base] || "the top"}).`);
    }
  }
  return moves;
}

/** The old path of every module (no .ts) and its new one, for the flat layout's specifiers. */
function oldToNew(): Map<string, string> {
  const map = new Map<string, string>();
  for (const [base, folder] of Object.entries(HOME)) map.set(`${CITY}/${base}`, folder ? `${CITY}/${folder}/${base}` : `${CITY}/${base}`);
  for (const [from, to] of Object.entries(FOLDER_HOME)) map.set(`${CITY}/${from}`, `${CITY}/${to}`);
  return map;
}

/** The capability (unit) a file of lib/city/ belongs to: its face's folder, or the file itself at the top. */
function unitOf(file: string): string | null {
  if (!file.startsWith(`${CITY}/`)) return null;
  const parts = file.slice(CITY.length + 1).split("/");
  if (parts.length === 1) return file.replace(/\.ts$/, "");
  if (GROUPS.has(parts[0]!)) return `${CITY}/${parts[0]}/${parts[1]}`;
  return `${CITY}/${parts[0]}`;
}

const isTest = (file: string) => file.startsWith("tests/");

// ---- exports: what each module of lib/city/ defines or passes on ----

type Kind = "type" | "value";
interface Origin {
  file: string;
  kind: Kind;
}

const sources = new Map<string, string>();
const read = (file: string) => {
  if (!sources.has(file)) sources.set(file, readFileSync(path.join(ROOT, file), "utf8"));
  return sources.get(file)!;
};

/** The file a module path (no .ts) is on disk now: the file, or its folder's index. */
function onDisk(mod: string): string | null {
  if (existsSync(path.join(ROOT, `${mod}.ts`))) return `${mod}.ts`;
  if (existsSync(path.join(ROOT, mod, "index.ts"))) return `${mod}/index.ts`;
  return null;
}

const DECL =
  /^export\s+(?:declare\s+)?(?:default\s+)?(?:async\s+)?(function\*?|const|let|var|class|abstract\s+class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/gm;
const LOCAL_DECL = (name: string) =>
  new RegExp(
    `^(?:export\\s+)?(?:declare\\s+)?(?:async\\s+)?(function\\*?|const|let|var|class|abstract\\s+class|interface|type|enum)\\s+${name.replace(/\$/g, "\\$")}\\b`,
    "m",
  );
const NAMED = /(import|export)\s+(type\s+)?\{([^}]*)\}\s*from\s*"([^"]+)"\s*;?/g;
const DYNAMIC = /const\s*\{([^}]*)\}\s*=\s*await\s+import\(\s*"([^"]+)"\s*\)/g;

interface Spec {
  name: string;
  alias: string | null;
  type: boolean;
}
function parseSpecs(list: string, allType: boolean): Spec[] {
  return list
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const type = allType || s.startsWith("type ");
      const [name, alias] = s
        .replace(/^type\s+/, "")
        .split(/\s+as\s+/)
        .map((p) => p.trim());
      return { name: name!, alias: alias ?? null, type };
    });
}

/**
 * Where a name a module exports is defined: followed through plain files' re-exports (gate.ts
 * passes the nonces' functions on), stopped at a face (index.ts), which is the place to import from.
 */
function originOf(file: string, name: string, seen = new Set<string>()): Origin | null {
  if (seen.has(`${file}#${name}`)) return null;
  seen.add(`${file}#${name}`);
  const text = read(file);
  for (const m of text.matchAll(DECL)) if (m[2] === name) return { file, kind: /interface|type/.test(m[1]!) ? "type" : "value" };
  for (const m of text.matchAll(NAMED)) {
    if (m[1] !== "export") continue;
    for (const spec of parseSpecs(m[3]!, Boolean(m[2]))) {
      if ((spec.alias ?? spec.name) !== name) continue;
      const target = resolveModule(file, m[4]!);
      if (!target || !target.startsWith(`${CITY}/`) || (path.posix.basename(file) === "index.ts" && !generatedFace(file)))
        return { file, kind: spec.type ? "type" : (kindIn(file, name) ?? "value") };
      const deeper = originOf(target, spec.name, seen);
      return deeper ?? { file, kind: spec.type ? "type" : "value" };
    }
  }
  // export const { a, b: c } = boundLog (a face's destructured functions)
  for (const m of text.matchAll(/^export\s+const\s*\{([^}]*)\}\s*=/gm)) {
    for (const entry of m[1]!
      .split(",")
      .map((e) => e.trim())
      .filter(Boolean))
      if (entry.split(":").pop()!.trim() === name) return { file, kind: "value" };
  }
  // export { a, b } of local declarations
  for (const m of text.matchAll(/^export\s+(type\s+)?\{([^}]*)\}\s*;/gm)) {
    for (const spec of parseSpecs(m[2]!, Boolean(m[1])))
      if ((spec.alias ?? spec.name) === name) return { file, kind: spec.type ? "type" : (kindIn(file, spec.name) ?? "value") };
  }
  return null;
}
function kindIn(file: string, name: string): Kind | null {
  const m = LOCAL_DECL(name).exec(read(file));
  return m ? (/interface|type/.test(m[1]!) ? "type" : "value") : null;
}

/** Old location of each moved file, to resolve its relative specifiers as they were written. */
const oldPathOf = new Map<string, string>();
const modMap = oldToNew();

/** The file a specifier written in `importer` means: on disk now, else through the old-to-new table. */
function resolveModule(importer: string, spec: string): string | null {
  let mod: string;
  if (spec.startsWith("@/")) mod = spec.slice(2);
  else if (spec.startsWith(".")) mod = path.posix.normalize(path.posix.join(path.posix.dirname(oldPathOf.get(importer) ?? importer), spec));
  else return null;
  mod = mod.replace(/\.ts$/, "").replace(/\/$/, "");
  if (!mod.startsWith(`${CITY}/`) && mod !== CITY) {
    return mod.startsWith("lib/") || mod.startsWith("db/") ? onDisk(mod) : null;
  }
  // On disk now (a moved tree, or a module that never moved), else where the flat layout's module went.
  const fresh = onDisk(mod);
  if (fresh) return fresh;
  const mapped = mapOld(mod);
  return mapped ? onDisk(mapped) : null;
}
function mapOld(mod: string): string | null {
  if (modMap.has(mod)) return modMap.get(mod)!;
  for (const [from, to] of Object.entries(FOLDER_HOME)) {
    const old = `${CITY}/${from}/`;
    if (mod.startsWith(old)) return `${CITY}/${to}/${mod.slice(old.length)}`;
  }
  return null;
}
function generatedFace(file: string): boolean {
  return existsSync(path.join(ROOT, file)) && read(file).startsWith(FACE_MARK);
}

// ---- counting ----

function countReport(title: string): void {
  const files = walk(CITY).filter((f) => f.endsWith(".ts"));
  const perFolder = new Map<string, number>();
  for (const f of files) perFolder.set(path.posix.dirname(f), (perFolder.get(path.posix.dirname(f)) ?? 0) + 1);
  const lines = files.map((f) => ({ f, n: read(f).split("\n").length - 1 })).sort((a, b) => b.n - a.n);
  // A capability of a flat file is its HOME entry: so the flat layout is counted by the capabilities it will have.
  const capOf = (f: string) => {
    const u = unitOf(f)!;
    const top = u.slice(CITY.length + 1);
    if (!top.includes("/") && top in HOME) return HOME[top] ? `${CITY}/${HOME[top]}` : u;
    const first = top.split("/")[0]!;
    if (first in FOLDER_HOME) return `${CITY}/${FOLDER_HOME[first]}`;
    return u;
  };
  let fileEdges = 0;
  let deep = 0;
  const unitEdges = new Set<string>();
  for (const f of walk("lib").filter((x) => x.startsWith(`${CITY}/`) && x.endsWith(".ts"))) {
    const targets = new Set<string>();
    for (const m of read(f).matchAll(NAMED)) {
      const t = resolveModule(f, m[4]!);
      if (!t || !t.startsWith(`${CITY}/`)) continue;
      if (capOf(t) === capOf(f)) continue;
      targets.add(t);
      if (!t.endsWith("/index.ts") && capOf(t) !== t.replace(/\.ts$/, "")) deep++;
    }
    fileEdges += targets.size;
    for (const t of targets) unitEdges.add(`${capOf(f)} -> ${capOf(t)}`);
  }
  console.log(`== ${title}`);
  console.log(`files under lib/city: ${files.length}, lines ${lines.reduce((s, x) => s + x.n, 0)}`);
  for (const [d, n] of [...perFolder].sort()) console.log(`  ${String(n).padStart(3)}  ${d}/`);
  console.log("largest files:");
  for (const { f, n } of lines.slice(0, 8)) console.log(`  ${String(n).padStart(4)}  ${f}`);
  console.log(`imports across capabilities (file -> other capability's module, distinct pairs): ${fileEdges}`);
  console.log(`  of which past a face, into another capability's inner file: ${deep}`);
  console.log(`capability -> capability arrows: ${unitEdges.size}`);
}

// ---- the move ----

async function main(): Promise<void> {
  if (report) {
    countReport("now");
    testReport();
    return;
  }
  const moves = topMoves();
  // The tests' table is checked before anything moves too (the tests move last, below).
  testMoves();
  // Forms this script cannot rewrite stop it before anything moves.
  for (const f of codeFiles().filter((x) => x !== "scripts/house-move.ts")) {
    const text = read(f);
    if (/import\s+\*\s+as\s+\w+\s+from\s+"[^"]*lib\/city/.test(text) || /import\s+[A-Za-z_$][\w$]*\s*(,|from)\s*[^;]*"[^"]*lib\/city/.test(text))
      fail(`${f}: a namespace or default import of the city; this script rewrites only named imports.`);
    if (/^import\s+"[^"]*lib\/city/m.test(text)) fail(`${f}: a side-effect import of the city; this script rewrites only named imports.`);
  }
  sources.clear();
  // Faces this script wrote before are read through (to find each name's file) and written again.
  const oldFaces = walk(CITY).filter((x) => x.endsWith("/index.ts") && generatedFace(x));

  gitMoves(moves, oldPathOf);
  if (moves.length) console.log(`moved ${moves.length}: ${moves.map((m) => `${m.from} -> ${m.to}`).join(", ")}`);

  const code = codeFiles().filter((f) => f !== "scripts/house-move.ts");
  sources.clear();

  // Pass 1: where each imported name of the city is defined, and what each face has to show.
  interface Use {
    importer: string;
    origin: Origin;
    unit: string;
  }
  const faceNames = new Map<string, Map<string, Origin>>(); // unit -> name -> origin
  const resolveName = (importer: string, spec: string, name: string): Origin => {
    const target = resolveModule(importer, spec);
    if (!target) fail(`${importer}: cannot resolve "${spec}".`);
    const origin = originOf(target, name);
    if (!origin) fail(`${importer}: "${name}" is not exported by "${spec}" (${target}).`);
    return origin;
  };
  const uses: Use[] = [];
  const cityModule = (importer: string, spec: string) => {
    const t = resolveModule(importer, spec);
    return t && t.startsWith(`${CITY}/`) ? t : null;
  };
  for (const f of code) {
    const text = read(f);
    for (const m of [...text.matchAll(NAMED)]
      .map((m) => ({ list: m[3]!, spec: m[4]!, allType: Boolean(m[2]) }))
      .concat([...text.matchAll(DYNAMIC)].map((m) => ({ list: m[1]!, spec: m[2]!, allType: false })))) {
      if (!cityModule(f, m.spec)) continue;
      for (const s of parseSpecs(m.list, m.allType)) {
        const origin = resolveName(f, m.spec, s.name);
        const unit = unitOf(origin.file)!;
        uses.push({ importer: f, origin, unit });
        if (isCapability(unit) && unitOf(f) !== unit && !isTest(f) && generatedOrNew(unit)) {
          if (!faceNames.has(unit)) faceNames.set(unit, new Map());
          faceNames.get(unit)!.set(s.name, origin);
        }
      }
    }
  }

  // A hand-written face (the logs') must already show what others import through it.
  for (const u of uses) {
    if (unitOf(u.importer) === u.unit || isTest(u.importer) || generatedOrNew(u.unit) || !isCapability(u.unit)) continue;
    if (u.origin.file !== `${u.unit}/index.ts`) fail(`${u.importer} imports ${u.origin.file} past its hand-written face ${u.unit}/index.ts.`);
  }

  // The faces.
  const faces = new Map<string, string>();
  for (const [unit, names] of [...faceNames].sort(([a], [b]) => a.localeCompare(b))) {
    const byFile = new Map<string, string[]>();
    for (const [name, origin] of [...names].sort(([a], [b]) => a.localeCompare(b))) {
      const rel = `./${path.posix.relative(unit, origin.file).replace(/\.ts$/, "")}`;
      if (!byFile.has(rel)) byFile.set(rel, []);
      byFile.get(rel)!.push(origin.kind === "type" ? `type ${name}` : name);
    }
    const lines = [
      FACE_MARK,
      `// (${unit}/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.`,
      ...[...byFile].sort(([a], [b]) => a.localeCompare(b)).map(([rel, names]) => `export { ${names.join(", ")} } from "${rel}";`),
      "",
    ];
    faces.set(`${unit}/index.ts`, lines.join("\n"));
  }

  // Pass 2: every import of the city written again, grouped by where each name now comes from.
  const specFor = (importer: string, origin: Origin, name: string): string => {
    const unit = unitOf(origin.file)!;
    const same = unitOf(importer) === unit;
    if (same) {
      let rel = path.posix.relative(path.posix.dirname(importer), origin.file.replace(/(\/index)?\.ts$/, ""));
      if (!rel.startsWith(".")) rel = `./${rel}`;
      return rel;
    }
    if (!isCapability(unit)) return `@/${origin.file.replace(/\.ts$/, "")}`;
    if (generatedOrNew(unit)) {
      if (faceNames.get(unit)?.has(name)) return `@/${unit}`;
      if (isTest(importer)) return `@/${origin.file.replace(/\.ts$/, "")}`;
      fail(`${importer}: "${name}" of ${unit} is not on its face.`);
    }
    return origin.file === `${unit}/index.ts` ? `@/${unit}` : `@/${origin.file.replace(/\.ts$/, "")}`;
  };
  let rewritten = 0;
  const changed: string[] = [];
  const written = new Map<string, string>();
  for (const f of code) {
    const text = read(f);
    let out = text.replace(NAMED, (whole, kw: string, allType: string | undefined, list: string, spec: string) => {
      if (!cityModule(f, spec)) return whole;
      const groups = new Map<string, string[]>();
      for (const s of parseSpecs(list, Boolean(allType))) {
        const origin = resolveName(f, spec, s.name);
        const to = specFor(f, origin, s.name);
        if (!groups.has(to)) groups.set(to, []);
        const typed = !allType && s.type ? "type " : "";
        groups.get(to)!.push(`${typed}${s.name}${s.alias ? ` as ${s.alias}` : ""}`);
      }
      return [...groups].map(([to, names]) => `${kw} ${allType ? "type " : ""}{ ${names.join(", ")} } from "${to}";`).join("\n");
    });
    // A bare import("...") (instrumentation's Promise.all) of a face or a top file: its new place.
    out = out.replace(/(?<!await\s+)import\(\s*"([^"]+)"\s*\)/g, (whole, spec: string) => {
      const target = cityModule(f, spec);
      if (!target) return whole;
      const face = target.endsWith("/index.ts") || !target.slice(CITY.length + 1).includes("/");
      if (!face && !isTest(f)) fail(`${f}: import("${spec}") reaches ${target} past its face and names nothing this script can read.`);
      return `import("@/${target.replace(/(\/index)?\.ts$/, "")}")`;
    });
    out = out.replace(DYNAMIC, (whole, list: string, spec: string) => {
      if (!cityModule(f, spec)) return whole;
      const targets = new Set(parseSpecs(list, false).map((s) => specFor(f, resolveName(f, spec, s.name), s.name)));
      if (targets.size !== 1) fail(`${f}: one dynamic import("${spec}") would have to be split.`);
      return whole.replace(`"${spec}"`, `"${[...targets][0]}"`);
    });
    // vi.mock("...") names a module, not a face: it is sent to the module's new file.
    out = out.replace(/\b(vi\.(?:do)?mock)\(\s*"([^"]+)"/g, (whole, call: string, spec: string) => {
      const target = cityModule(f, spec);
      return target ? `${call}("@/${target.replace(/(\/index)?\.ts$/, "")}"` : whole;
    });
    out = mergeImports(f, out);
    if (out !== text) {
      rewritten++;
      written.set(f, out);
      changed.push(f);
    }
  }
  for (const [f, text] of written) writeFileSync(path.join(ROOT, f), text);
  for (const f of oldFaces) if (!faces.has(f)) unlinkSync(path.join(ROOT, f));
  for (const [file, text] of faces) {
    writeFileSync(path.join(ROOT, file), text);
    changed.push(file);
  }
  console.log(`imports rewritten in ${rewritten} files; ${faces.size} faces written`);

  // Path mentions in comments, documents and stryker's list: lib/city/<old>.ts and lib/city/<old folder>.
  const mentions = changedMentions();
  changed.push(...mentions);

  // Every capability -> capability arrow, checked for a circle (dependency-cruiser checks files).
  checkArrows(code);

  // The tests, into the rooms of what they test.
  const { written: testsWritten, newOf } = moveTests();
  // What the city's passes wrote is formatted below at its new place.
  changed.splice(0, changed.length, ...changed.map((f) => newOf.get(f) ?? f), ...testsWritten, ...testMentions());

  await formatFiles(changed);
  sources.clear();
  countReport("after");
  testReport();
}

/** One import statement a module of the city: names that now come from one face are imported once. */
function mergeImports(file: string, text: string): string {
  const first = new Map<string, { names: string[]; at: number }>();
  const statements = [...text.matchAll(/^import\s+(type\s+)?\{([^}]*)\}\s*from\s*"([^"]+)";?[ \t]*\n/gm)];
  const ofCity = (spec: string) => spec.startsWith("@/lib/city/") || (file.startsWith(`${CITY}/`) && spec.startsWith("."));
  const drop = new Set<number>();
  for (const m of statements) {
    if (!ofCity(m[3]!)) continue;
    const key = `${m[1] ? "type " : ""}${m[3]}`;
    const names = m[2]!
      .split(",")
      .map((n) => n.trim())
      .filter(Boolean);
    const held = first.get(key);
    if (!held) first.set(key, { names, at: m.index! });
    else {
      held.names.push(...names.filter((n) => !held.names.includes(n)));
      drop.add(m.index!);
    }
  }
  if (!drop.size) return text;
  let out = "";
  let last = 0;
  for (const m of statements) {
    const key = `${m[1] ? "type " : ""}${m[3]}`;
    const held = ofCity(m[3]!) ? first.get(key) : undefined;
    out += text.slice(last, m.index!);
    last = m.index! + m[0].length;
    if (drop.has(m.index!)) continue;
    out += held && held.at === m.index ? `import ${m[1] ? "type " : ""}{ ${held.names.join(", ")} } from "${m[3]}";\n` : m[0];
  }
  return out + text.slice(last);
}

const isCapability = (unit: string) => unit.slice(CITY.length + 1).includes("/") || capabilityFolders.has(unit.slice(CITY.length + 1));
/** Whether a capability's face is this script's to write (it has no hand-written index.ts). */
function generatedOrNew(unit: string): boolean {
  const face = `${unit}/index.ts`;
  return !existsSync(path.join(ROOT, face)) || generatedFace(face);
}

function changedMentions(): string[] {
  const pairs: Array<[RegExp, string]> = [];
  for (const [base, folder] of Object.entries(HOME))
    if (folder) pairs.push([new RegExp(`lib/city/${base.replace(/-/g, "\\-")}\\.ts\\b`, "g"), `lib/city/${folder}/${base}.ts`]);
  for (const [from, to] of Object.entries(FOLDER_HOME)) if (from !== to) pairs.push([new RegExp(`lib/city/${from}(?![\\w-])`, "g"), `lib/city/${to}`]);
  return rewriteMentions(pairs, ["scripts/house-move.ts"]);
}

function checkArrows(code: string[]): void {
  sources.clear();
  const arrows = new Map<string, Set<string>>();
  for (const f of code.filter((x) => x.startsWith(`${CITY}/`))) {
    for (const m of read(f).matchAll(NAMED)) {
      const t = resolveModule(f, m[4]!);
      if (!t || !t.startsWith(`${CITY}/`)) continue;
      const [a, b] = [unitOf(f)!, unitOf(t)!];
      if (a === b) continue;
      if (!arrows.has(a)) arrows.set(a, new Set());
      arrows.get(a)!.add(b);
    }
  }
  const state = new Map<string, "open" | "done">();
  const visit = (u: string, trail: string[]): void => {
    if (state.get(u) === "done") return;
    if (state.get(u) === "open") fail(`capabilities in a circle: ${[...trail.slice(trail.indexOf(u)), u].join(" -> ")}`);
    state.set(u, "open");
    for (const v of arrows.get(u) ?? []) visit(v, [...trail, u]);
    state.set(u, "done");
  };
  for (const u of arrows.keys()) visit(u, []);
}

// ---- the tests (issue 46, item 3): each test file in the room of what it tests ----

/**
 * The rooms of tests/ that are not a capability of lib/city/ (those are the capabilities' own
 * names, logs/<log> included). Each is named in docs/architecture.md's code map.
 */
const TEST_ROOMS = new Set([
  "city", // the top of lib/city/: the census and its tide, the signing key
  "db", // db/: drivers, prepared statements, migrations, one connection per transaction, outages
  "doors", // the request pipeline every door goes through: caller, cache, tags, addresses, refusals
  "surfaces", // what is built from the registry: OpenAPI, llms.txt, MCP, discovery, published limits
  "tlog", // lib/tlog/: the log's pure core
  "scan", // lib/scan/
  "plat", // lib/plat/ and the pages' rules
  "ground", // lib/'s top files: env, errors, logger, sign-request
  "docs", // documents kept true by a test
  "scripts", // operator and developer commands, the test run's figures
  "support", // shared helpers of the tests (no tests)
]);
/** The folders of the kinds layout: a file in one of them must have its row in TEST_HOME. */
const TEST_KINDS = ["unit", "integration", "http"];

/**
 * Each file of the kinds layout (its path under tests/) and its room. A test of tests/http/
 * (a real `next start`, vitest project "http") goes to its room's http/ folder, so the project
 * is still told by the path (tests/<room>/http/); every other file goes to the room itself.
 */
const TEST_HOME: Record<string, string> = {
  // a2a
  "unit/a2a-card.test.ts": "a2a",
  "integration/a2a-bounds.test.ts": "a2a",
  "integration/a2a.test.ts": "a2a",
  "http/a2a.test.ts": "a2a",
  // bounds
  "unit/bounds-mutants.test.ts": "bounds",
  "unit/rate-mutants.test.ts": "bounds",
  "integration/bounded-sweeps.test.ts": "bounds",
  "integration/rate-stripes.test.ts": "bounds",
  "integration/rate-window-functions.test.ts": "bounds",
  "integration/rate-windows.test.ts": "bounds",
  "integration/store-bounds-migration.test.ts": "bounds",
  "integration/store-bounds.test.ts": "bounds",
  "integration/store-shares.test.ts": "bounds",
  "integration/store-stripes.test.ts": "bounds",
  "http/security-postgres-stores.test.ts": "bounds",
  "http/security-postgres-floods.test.ts": "bounds",
  "http/security-postgres-windows.test.ts": "bounds",
  // challenge
  "unit/gate-nonce-limit.test.ts": "challenge",
  "unit/gate-nonce-mac.test.ts": "challenge",
  "unit/gate-prefixes.test.ts": "challenge",
  "unit/pow.test.ts": "challenge",
  "integration/gate-nonces.test.ts": "challenge",
  "integration/gate-pow-doors.test.ts": "challenge",
  "integration/gate-pow.test.ts": "challenge",
  "integration/gate-pow-steps.test.ts": "challenge",
  "integration/gate-shares.test.ts": "challenge",
  "http/gate-pow-signed.test.ts": "challenge",
  "http/gate-pow.test.ts": "challenge",
  "http/security-postgres-gate-shares.test.ts": "challenge",
  // clinic
  "integration/clinic.test.ts": "clinic",
  "http/security-postgres-clinic-export.test.ts": "clinic",
  "http/security-postgres-clinic.test.ts": "clinic",
  // directory
  "unit/name-form.test.ts": "directory",
  "unit/names-mutants.test.ts": "directory",
  "integration/citizen-profile.test.ts": "directory",
  "integration/name-form-migration.test.ts": "directory",
  "integration/name-look-alikes.test.ts": "directory",
  "integration/peer-names.test.ts": "directory",
  "integration/peer-search.test.ts": "directory",
  "integration/peers.test.ts": "directory",
  // gate
  "unit/gate-rules.test.ts": "gate",
  "integration/gate-locks.test.ts": "gate",
  "integration/gate.test.ts": "gate",
  "integration/instances.test.ts": "gate",
  "http/gate.test.ts": "gate",
  "http/security-postgres-gate-locks.test.ts": "gate",
  // keys
  "unit/keys-mutants.test.ts": "keys",
  "integration/key-paths.test.ts": "keys",
  "integration/key-recovery.test.ts": "keys",
  "integration/prove.test.ts": "keys",
  "integration/recovery.test.ts": "keys",
  "integration/signed-requests.test.ts": "keys",
  "integration/tokens.test.ts": "keys",
  "http/security-postgres-keys.test.ts": "keys",
  "http/security-postgres-recovery.test.ts": "keys",
  // live
  "integration/live-prepared.test.ts": "live",
  "integration/live-unprepared.test.ts": "live",
  "integration/live.test.ts": "live",
  "integration/poll-plan.test.ts": "live",
  "integration/poll-window.test.ts": "live",
  // mail
  "integration/mail.test.ts": "mail",
  // origin
  "unit/origin-addresses.test.ts": "origin",
  "integration/origin-fetch.test.ts": "origin",
  "integration/origin-shares.test.ts": "origin",
  "http/origin.test.ts": "origin",
  // posts
  "integration/lanterns.test.ts": "posts",
  "integration/posts.test.ts": "posts",
  // quarantine
  "integration/quarantine.test.ts": "quarantine",
  // residency
  "integration/export-head.test.ts": "residency",
  "integration/export.test.ts": "residency",
  "integration/residency.test.ts": "residency",
  "http/security-postgres-export.test.ts": "residency",
  // restriction
  "integration/appeals.test.ts": "restriction",
  "integration/restriction.test.ts": "restriction",
  // shelves
  "integration/checkpoints.test.ts": "shelves",
  "integration/locker.test.ts": "shelves",
  "integration/lots.test.ts": "shelves",
  "integration/seals.test.ts": "shelves",
  "integration/vault.test.ts": "shelves",
  // ward
  "unit/ward-shapes.test.ts": "ward",
  "integration/ward-texts.test.ts": "ward",
  "integration/ward.test.ts": "ward",
  // the logs
  "unit/log-receipts-mutants.test.ts": "logs/transparency-log",
  "unit/log-witnesses-mutants.test.ts": "logs/transparency-log",
  "unit/witness-config.test.ts": "logs/transparency-log",
  "integration/log-batches.test.ts": "logs/transparency-log",
  "integration/log-identity.test.ts": "logs/transparency-log",
  "integration/log-tiles-wide.test.ts": "logs/transparency-log",
  "integration/log-tree.test.ts": "logs/transparency-log",
  "integration/log-waiters.test.ts": "logs/transparency-log",
  "integration/log-witness-client.test.ts": "logs/transparency-log",
  "integration/log-witness.test.ts": "logs/transparency-log",
  "http/log-verify.test.ts": "logs/transparency-log",
  "http/security-postgres-log-batches.test.ts": "logs/transparency-log",
  "http/security-postgres-log-identity.test.ts": "logs/transparency-log",
  "integration/log-query-int.test.ts": "logs/residency-log",
  "integration/residency-history.test.ts": "logs/residency-log",
  "integration/residency-log.test.ts": "logs/residency-log",
  "integration/identity-log-append.test.ts": "logs/identity-log",
  "integration/identity-log-import.test.ts": "logs/identity-log",
  // the top of lib/city/
  "integration/census-counts.test.ts": "city",
  "integration/signing.test.ts": "city",
  "integration/tide.test.ts": "city",
  // db/
  "unit/db-driver.test.ts": "db",
  "integration/database.test.ts": "db",
  "integration/one-connection.test.ts": "db",
  "integration/pglite-prepared.test.ts": "db",
  "unit/statement-shapes.test.ts": "db",
  "http/security-postgres.test.ts": "db",
  // the request pipeline
  "unit/client-address-mutants.test.ts": "doors",
  "unit/client-address.test.ts": "doors",
  "unit/etag.test.ts": "doors",
  "unit/query-int.test.ts": "doors",
  "integration/auth.test.ts": "doors",
  "integration/citizen-row-lock.test.ts": "doors",
  "integration/declared-problems.test.ts": "doors",
  "integration/doors.test.ts": "doors",
  "integration/faults.test.ts": "doors",
  "integration/hostile-roundtrip.test.ts": "doors",
  "integration/hostile.test.ts": "doors",
  "integration/irreversible-and-stored.test.ts": "doors",
  "integration/pagination.test.ts": "doors",
  "integration/read-cache.test.ts": "doors",
  "integration/reads.test.ts": "doors",
  "integration/refusal-advice.test.ts": "doors",
  "integration/round-trips.test.ts": "doors",
  "integration/shared-cache.test.ts": "doors",
  "integration/stored-text.test.ts": "doors",
  "http/etag-postgres.test.ts": "doors",
  "http/headers.test.ts": "doors",
  "http/security-postgres-addresses.test.ts": "doors",
  "http/security.test.ts": "doors",
  // the surfaces
  "unit/configured-limits-addresses.test.ts": "surfaces",
  "unit/configured-limits.test.ts": "surfaces",
  "unit/limits.test.ts": "surfaces",
  "unit/llms.test.ts": "surfaces",
  "unit/openapi-lint.test.ts": "surfaces",
  "unit/openapi.test.ts": "surfaces",
  "unit/reader-references.test.ts": "surfaces",
  "unit/registry.test.ts": "surfaces",
  "unit/tool-schemas.test.ts": "surfaces",
  "integration/api-catalog.test.ts": "surfaces",
  "integration/constant-documents.test.ts": "surfaces",
  "integration/mcp.test.ts": "surfaces",
  "integration/signed-surfaces.test.ts": "surfaces",
  "http/discovery.test.ts": "surfaces",
  "http/mcp-refusals.test.ts": "surfaces",
  "http/mcp-writes.test.ts": "surfaces",
  "http/mcp.test.ts": "surfaces",
  "http/published-limits.test.ts": "surfaces",
  // lib/tlog/
  "unit/log-note-keyid.test.ts": "tlog",
  "unit/log-note-mutants.test.ts": "tlog",
  "unit/log-tiles-mutants.test.ts": "tlog",
  "unit/log-tree-mutants.test.ts": "tlog",
  "unit/log-verifier-mutants.test.ts": "tlog",
  "unit/log-witness-fork.test.ts": "tlog",
  "unit/log-witness-server-mutants.test.ts": "tlog",
  "unit/tlog-append-mutants.test.ts": "tlog",
  "unit/tlog-storage-mutants.test.ts": "tlog",
  "unit/tlog-vectors.test.ts": "tlog",
  // lib/scan/ (its corpus is read by the clinic's, the doors' and the bounds' tests too: support)
  "unit/scan-mutants.test.ts": "scan",
  "unit/scan.test.ts": "scan",
  "unit/scan-corpus.ts": "support",
  // lib/plat/
  "unit/csp.test.ts": "plat",
  "unit/plat-chart.test.ts": "plat",
  "unit/plat-door-words.test.ts": "plat",
  "unit/plat-nav.test.ts": "plat",
  // lib/'s top files
  "unit/access-log.test.ts": "ground",
  "unit/env.test.ts": "ground",
  "unit/errors.test.ts": "ground",
  "unit/sign-request-pow.test.ts": "ground",
  "unit/sign-request.test.ts": "ground",
  // documents
  "unit/architecture-doc.test.ts": "docs",
  "unit/configuration-doc.test.ts": "docs",
  // scripts and the test run
  "unit/bench-contention.test.ts": "scripts",
  "unit/figures.test.ts": "scripts",
  "unit/ignored-state.test.ts": "scripts",
  "integration/bench-lock-sampler.test.ts": "scripts",
};

/** Where a file of the kinds layout goes: tests/<room>/<name>, or tests/<room>/http/<name> for an HTTP test. */
function testTarget(old: string): string {
  const [kind, ...rest] = old.split("/");
  const room = TEST_HOME[old]!;
  const name = rest.join("/");
  return kind === "http" && room !== "support" ? `tests/${room}/http/${name}` : `tests/${room}/${name}`;
}

/** The test moves still to make, after checking every file of the kinds folders has its row. */
function testMoves(): Array<{ from: string; to: string }> {
  const capabilityRooms = new Set([...capabilityFolders].filter((c) => !GROUPS.has(c)));
  for (const [from, to] of Object.entries(FOLDER_HOME)) if (to.includes("/")) (capabilityRooms.delete(from), capabilityRooms.add(to));
  const targets = new Map<string, string>();
  for (const old of Object.keys(TEST_HOME)) {
    const room = TEST_HOME[old]!;
    if (!TEST_KINDS.includes(old.split("/")[0]!)) fail(`TEST_HOME row "${old}" is not a file of ${TEST_KINDS.map((k) => `tests/${k}/`).join(", ")}.`);
    if (!capabilityRooms.has(room) && !TEST_ROOMS.has(room))
      fail(`TEST_HOME row "${old}": "${room}" is neither a capability of lib/city/ nor one of TEST_ROOMS.`);
    if (room === "support" && old.endsWith(".test.ts")) fail(`TEST_HOME row "${old}": tests/support/ holds no tests.`);
    const to = testTarget(old);
    if (targets.has(to)) fail(`TEST_HOME rows "${targets.get(to)}" and "${old}" both go to ${to}.`);
    targets.set(to, old);
  }
  const moves: Array<{ from: string; to: string }> = [];
  for (const kind of TEST_KINDS) {
    for (const file of walk(`tests/${kind}`)) {
      const old = file.slice("tests/".length);
      if (!(old in TEST_HOME)) fail(`${file} is a file of the kinds layout that scripts/house-move.ts does not know: add it to TEST_HOME with its room.`);
      const to = testTarget(old);
      if (existsSync(path.join(ROOT, to))) fail(`${file} and ${to} both exist: keep one.`);
      // A file that finds others from its own folder would find the wrong ones after the move.
      if (/\b__dirname\b|import\.meta\.(dirname|filename)|new URL\(\s*"\.{1,2}\//.test(readFileSync(path.join(ROOT, file), "utf8")))
        fail(`${file} finds files from its own folder (__dirname, import.meta): make that independent of where it is, then run again.`);
      moves.push({ from: file, to });
    }
  }
  return moves;
}

/** Every place a specifier is written: import and export from, import(), vi.mock(), require(). */
const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*|^import\s+|\bvi\.(?:do)?mock\(\s*|\brequire\(\s*)"([^"]+)"/gm;

/** The file a specifier means, written in `importer` that was at `was` when it was written; null if it is not a file of the repository. */
function specifierFile(was: string, spec: string): string | null {
  let mod: string;
  if (spec.startsWith("@/")) mod = spec.slice(2);
  else if (spec.startsWith("./") || spec.startsWith("../")) mod = path.posix.normalize(path.posix.join(path.posix.dirname(was), spec));
  else return null;
  for (const candidate of [mod, `${mod}.ts`, `${mod}.tsx`, `${mod}/index.ts`])
    if (TEST_FILES_BEFORE.has(candidate) || TEST_ROWS.has(candidate)) return candidate;
  return null;
}
const TEST_FILES_BEFORE = new Set<string>();
/** Every row's old path and new one: a file written against the kinds layout (another branch's) still finds what it named. */
const TEST_ROWS = new Map(Object.keys(TEST_HOME).map((old) => [`tests/${old}`, testTarget(old)]));

/**
 * Moves the tests (git mv) and writes every specifier that named a moved file, or that a moved
 * file wrote relative to its old folder, again: a relative specifier stays relative
 * (`../support/x` from tests/keys/http/ is `../../support/x`), an `@/` one stays `@/`. Returns
 * the files written and where each moved file went.
 */
function moveTests(): { written: string[]; newOf: Map<string, string> } {
  const moves = testMoves();
  const files = [...CODE_ROOTS, ...ROOT_CONFIGS].flatMap((r) => walk(r)).filter((f) => /\.(ts|tsx|mts|mjs|cjs)$/.test(f));
  for (const f of files) TEST_FILES_BEFORE.add(f);
  const newOf = new Map(moves.map((m) => [m.from, m.to]));
  const oldOf = new Map(moves.map((m) => [m.to, m.from]));
  const tracked = new Set(execFileSync("git", ["ls-files", "tests"], { cwd: ROOT, encoding: "utf8" }).split("\n"));
  for (const { from, to } of moves) {
    mkdirSync(path.dirname(path.join(ROOT, to)), { recursive: true });
    // A file not yet added to git (a developer's new test) is moved as it is.
    if (tracked.has(from)) execFileSync("git", ["mv", from, to], { cwd: ROOT });
    else renameSync(path.join(ROOT, from), path.join(ROOT, to));
  }
  for (const kind of TEST_KINDS) {
    const dir = path.join(ROOT, "tests", kind);
    if (existsSync(dir) && walk(`tests/${kind}`).length === 0) rmSync(dir, { recursive: true });
  }
  if (moves.length) console.log(`tests moved: ${moves.length}`);

  const written: string[] = [];
  for (const f of files.map((x) => newOf.get(x) ?? x)) {
    const was = oldOf.get(f) ?? f;
    const text = readFileSync(path.join(ROOT, f), "utf8");
    const out = text.replace(SPECIFIER, (whole, head: string, spec: string) => {
      const target = specifierFile(was, spec);
      if (!target || (was === f && !TEST_ROWS.has(target))) return whole;
      const now = TEST_ROWS.get(target) ?? target;
      const keepExt = /\.(ts|tsx|mts|mjs|cjs|json)$/.test(spec);
      const bare = keepExt ? now : now.replace(/(\/index)?\.tsx?$/, "");
      let next: string;
      if (spec.startsWith("@/")) next = `@/${bare}`;
      else {
        next = path.posix.relative(path.posix.dirname(f), bare);
        if (!next.startsWith(".")) next = `./${next}`;
      }
      return next === spec ? whole : `${head}"${next}"`;
    });
    if (out !== text) {
      writeFileSync(path.join(ROOT, f), out);
      written.push(f);
    }
  }
  console.log(`test specifiers rewritten in ${written.length} files`);
  return { written, newOf };
}

/** Mentions of a test's path in the kinds layout (documents, comments, scripts' lists) sent to its room. */
function testMentions(): string[] {
  const pairs = Object.keys(TEST_HOME).map((old): [RegExp, string] => [
    new RegExp(`tests/${old.replace(/[.-]/g, "\\$&")}(?![\\w-]|\\.\\w)`, "g"),
    testTarget(old),
  ]);
  const tracked = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" })
    .split("\n")
    .filter((f) => f && !SKIP.test(f) && f !== "scripts/house-move.ts" && f !== "package-lock.json" && existsSync(path.join(ROOT, f)));
  const oldFolder = new RegExp(`tests/(${TEST_KINDS.join("|")})/`);
  const files = tracked.filter((x) => /\.(ts|tsx|mts|mjs|cjs|md|sh|ya?ml|json)$/.test(x) || x.startsWith(".ci/"));
  const touched = rewriteFiles(files, pairs);
  const left = files.flatMap((f) =>
    readFileSync(path.join(ROOT, f), "utf8")
      .split("\n")
      .flatMap((line, i) => (oldFolder.test(line) ? [`${f}:${i + 1}`] : [])),
  );
  console.log(`test path mentions rewritten in ${touched.length} files`);
  // A glob (tests/unit/*-mutants.test.ts) or a folder named in prose is for a person to write again.
  if (left.length) console.log(`mentions of the kinds folders left (globs and prose, by hand):\n  ${left.join("\n  ")}`);
  return touched;
}

/** Test files per room, for --report. */
function testReport(): void {
  const perRoom = new Map<string, number>();
  for (const f of walk("tests").filter((x) => /\.(test|spec)\.ts$/.test(x))) {
    const room = path.posix.dirname(f.slice("tests/".length)).replace(/\/http$/, "");
    perRoom.set(room, (perRoom.get(room) ?? 0) + 1);
  }
  console.log("test files per folder of tests/ (HTTP tests counted with their room):");
  for (const [room, n] of [...perRoom].sort()) console.log(`  ${String(n).padStart(3)}  tests/${room}/`);
}

void main();
