// Access lines of every in-process call would drown the test output; the HTTP tests keep them.
process.env.CITY_ACCESS_LOG ??= "off";

import { afterAll } from "vitest";
import { closeRelay } from "./databases";

afterAll(async () => {
  await closeRelay();
});
