import { beforeAll, inject } from "vitest";
import { BOOT_HOOK_TIMEOUT_MS } from "./next-server";

/*
 * `next start` servers shared by the HTTP files that need the same environment, one per
 * environment for the whole run instead of one per file: a server costs about 9.5 CPU-s, most of a
 * small file's work. The run's global setup keeps a broker in its own process (next-server.ts,
 * startServerBroker); a file asks it for the server of an environment (useSharedServer), the first
 * request starts it, and every server stops when the run ends. Files that share one run on it at
 * the same time: only a file whose every test makes its own citizens and asserts nothing of the
 * server's whole state (no census, no log size, no server output, no table dump) may use it.
 */

/**
 * The run's shared server of this environment (extra environment as startCityServer takes it),
 * started by the first file that asks; the getter gives its base URL to the tests.
 */
export function useSharedServer(extraEnv: Record<string, string> = {}): () => string {
  let baseUrl: string | undefined;
  beforeAll(async () => {
    const response = await fetch(`${inject("serverBroker")}/servers`, { method: "POST", body: JSON.stringify(extraEnv) });
    if (!response.ok) throw new Error(`the shared server did not start: ${await response.text()}`);
    baseUrl = ((await response.json()) as { baseUrl: string }).baseUrl;
  }, BOOT_HOOK_TIMEOUT_MS);
  return () => {
    if (!baseUrl) throw new Error("the shared server is not running");
    return baseUrl;
  };
}
