import { afterAll, beforeAll } from "vitest";
import { BOOT_HOOK_TIMEOUT_MS, type CityServer, startCityServer } from "./next-server";

/**
 * A `next start` server of the file's own (same build, a fresh PGlite folder, with extra
 * environment when given), for HTTP tests that admit citizens or need limits of their own: the
 * shared server's census stays as the other files expect it.
 */
export function useOwnServer(extraEnv: Record<string, string> = {}): () => string {
  let server: CityServer | undefined;
  beforeAll(async () => {
    server = await startCityServer(extraEnv);
  }, BOOT_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await server?.stop();
  }, 30_000);
  return () => {
    if (!server) throw new Error("the file's own server is not running");
    return server.baseUrl;
  };
}
