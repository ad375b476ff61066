import { afterAll } from "vitest";
import { closeRelay } from "./databases";

afterAll(async () => {
  await closeRelay();
});
