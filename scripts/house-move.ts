/**
 * The house by capability (issue 46): moves each flat file of lib/city/ into its capability's
 * folder, rewrites every import of the repository to the new paths, writes each new folder's face
 * (index.ts) and sends every import from another capability through that capability's face.
 *
 *   npx tsx scripts/house-move.ts            move, rewrite, write the faces, format
 *   npx tsx scripts/house-move.ts --report   only count: files per folder, imports across capabilities
 *
 * Re-runnable: it is written to be run again on main after other branches merged. A file at the
 * top of lib/city/ that is not in HOME below stops it (exit 1, naming the file) before anything
 * moves: give the new file its capability here and run it again. A second run on a moved tree
 * changes nothing.
 *
 * Imports are rewritten from their module specifiers with regular expressions rather than a
 * TypeScript AST: every import of the city is a plain `import { ... } from "..."`,
 * `export { ... } from "..."` or `const { ... } = await import("...")` (anything else stops it),
 * and prettier formats what it writes.
 */
import { existsSync, readdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { codeFiles, formatFiles, gitMoves, ROOT, rewriteMentions, stop, walk } from "./house/kit";

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
    return;
  }
  const moves = topMoves();
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

  await formatFiles(changed);
  sources.clear();
  countReport("after");
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

void main();
