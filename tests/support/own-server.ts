import { afterAll, beforeAll } from "vitest";
import type { TestProject } from "vitest/node";
import startNextServer, { BOOT_HOOK_TIMEOUT_MS } from "./next-server";

/**
 * A `next start` server of the file's own (same build, a fresh PGlite folder), for HTTP tests
 * that admit citizens: the shared server's census stays as the other files expect it.
 */
export function useOwnServer(): () => string {
  let base = "";
  let stop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const project = { provide: (key: string, value: string) => key === "baseUrl" && (base = value) } as unknown as TestProject;
    stop = await startNextServer(project);
  }, BOOT_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await stop?.();
  }, 30_000);
  return () => {
    if (!base) throw new Error("the file's own server is not running");
    return base;
  };
}
