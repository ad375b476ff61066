import { existsSync } from "node:fs";
import path from "node:path";

/** A migrated PGlite as its two forms: a folder a server starts on (a copy of it) and its dump. */
export const pgliteLayout = (made: string) => ({ folder: path.join(made, "data"), dump: path.join(made, "pglite.tar") });

/** Where `npm test` keeps the run's migrated PGlite (CITY_TEST_TEMPLATES: tests/support/database-template.ts). */
export const runPgliteTemplate = (runFolder: string) => path.join(runFolder, "pglite");

/**
 * The run's migrated PGlite folder if one is made by now (the first vitest run of `npm test` makes
 * it), else null: a caller outside vitest (the browser tests) copies it when it is there and
 * migrates a fresh folder otherwise.
 */
export function madePgliteFolder(): string | null {
  const runFolder = process.env.CITY_TEST_TEMPLATES;
  if (!runFolder) return null;
  const { folder } = pgliteLayout(runPgliteTemplate(runFolder));
  return existsSync(folder) ? folder : null;
}
