/**
 * What the house's re-runnable moves share (scripts/house-move.ts moves lib/city/ into capability
 * folders, scripts/doors-move.ts moves lib/doors/ into its roles): the files they read, `git mv`
 * with each moved file's old path remembered (its relative imports were written from there), the
 * rewrite of path mentions in comments and documents, and prettier over what they wrote.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import * as prettier from "prettier";

export const ROOT = process.cwd();

/** Where imports are rewritten, and where path mentions (comments, stryker's list, documents) are. */
export const CODE_ROOTS = ["app", "lib", "db", "scripts", "tests", "instrumentation.ts", "proxy.ts"];
export const TEXT_ROOTS = [...CODE_ROOTS, "docs", "stryker.config.mjs", "README.md", "SECURITY.md", "BENCHMARKS.md", ".github"];
export const SKIP = /(^|\/)(node_modules|\.next|db\/migrations)(\/|$)/;

/** Stops the script, naming it, before (or instead of) a change it cannot make safely. */
export function stop(script: string, message: string): never {
  console.error(`${script}: ${message}`);
  process.exit(1);
}

/** Every file under `rel` (a file or a folder), sorted, without node_modules, .next and migrations. */
export function walk(rel: string, out: string[] = []): string[] {
  const abs = path.join(ROOT, rel);
  if (!existsSync(abs) || SKIP.test(rel)) return out;
  if (statSync(abs).isFile()) {
    out.push(rel);
    return out;
  }
  for (const name of readdirSync(abs).sort()) walk(path.posix.join(rel, name), out);
  return out;
}

/** The TypeScript files whose imports a move rewrites. */
export const codeFiles = (): string[] => CODE_ROOTS.flatMap((r) => walk(r)).filter((f) => /\.(ts|tsx)$/.test(f));

/**
 * `git mv` each move (a file or a folder) and record, for every file that moved, where it was:
 * its relative specifiers were written from that place.
 */
export function gitMoves(moves: Array<{ from: string; to: string }>, oldPathOf: Map<string, string>): void {
  const before = codeFiles();
  for (const { from, to } of moves) {
    mkdirSync(path.dirname(path.join(ROOT, to)), { recursive: true });
    execFileSync("git", ["mv", from, to], { cwd: ROOT });
    for (const f of before) {
      if (f === from) oldPathOf.set(to, from);
      else if (f.startsWith(`${from}/`)) oldPathOf.set(`${to}/${f.slice(from.length + 1)}`, f);
    }
  }
}

/** Rewrites path mentions (old -> new) in `files`; returns the files it changed. */
export function rewriteFiles(files: string[], pairs: Array<[RegExp, string]>): string[] {
  const touched: string[] = [];
  for (const f of files) {
    const text = readFileSync(path.join(ROOT, f), "utf8");
    let out = text;
    for (const [re, to] of pairs) out = out.replace(re, to);
    if (out !== text) {
      writeFileSync(path.join(ROOT, f), out);
      touched.push(f);
    }
  }
  return touched;
}

/** Rewrites path mentions (old -> new) in every text file but `skip`; returns the files it changed. */
export function rewriteMentions(pairs: Array<[RegExp, string]>, skip: string[]): string[] {
  const files = TEXT_ROOTS.flatMap((r) => walk(r)).filter((x) => /\.(ts|tsx|mjs|cjs|md|sh|ya?ml|json)$/.test(x) && !skip.includes(x));
  const touched = rewriteFiles(files, pairs);
  console.log(`path mentions rewritten in ${touched.length} files`);
  return touched;
}

/** prettier over the code files a move wrote (documents are left as they were written). */
export async function formatFiles(files: string[]): Promise<void> {
  for (const f of [...new Set(files)].filter((x) => /\.(ts|tsx|mts|mjs)$/.test(x) && !SKIP.test(x))) {
    const abs = path.join(ROOT, f);
    const options = await prettier.resolveConfig(abs);
    writeFileSync(abs, await prettier.format(readFileSync(abs, "utf8"), { ...options, filepath: abs }));
  }
}
