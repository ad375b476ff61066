// Access lines of every in-process call would drown the test output; the HTTP tests keep them.
process.env.CITY_ACCESS_LOG ??= "off";

import { afterAll } from "vitest";

// The Neon relay a file's suites started, if any (databases.ts leaves its closer here): imported
// lazily, so a unit file does not load the database stack to close nothing.
afterAll(async () => {
  await (globalThis as { cityCloseRelay?: () => Promise<void> }).cityCloseRelay?.();
});
