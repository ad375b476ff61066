/*
 * Where the states city (playwright.config.ts) keeps its records: a PostgreSQL database of its own on
 * the server TEST_DATABASE_URL names, made by its server's command and dropped by the global teardown.
 * Read by the config, the seed (which edits the database beside the server, as an owner could) and
 * the teardown; the names come from the environment the config set once.
 */

/** The clinic's API key on the states city: no page may show it. */
export const CLINIC_API_KEY = "sk-plat-states-never-shown-0123456789";

/** The states city's database: its name, the connection options of the PostgreSQL tools, and its DATABASE_URL; null without TEST_DATABASE_URL. */
export function statesDatabase(): { name: string; connection: string[]; url: string } | null {
  const postgres = process.env.TEST_DATABASE_URL;
  const name = process.env.CITY_E2E_STATES_DB;
  if (!postgres || !name) return null;
  const pg = new URL(postgres);
  const user = decodeURIComponent(pg.username || "postgres");
  const host = pg.hostname;
  const port = pg.port || "5432";
  return { name, connection: ["-h", host, "-p", port, "-U", user], url: `postgres://${user}@${host}:${port}/${name}` };
}
