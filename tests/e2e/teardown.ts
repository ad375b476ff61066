import { execFileSync } from "node:child_process";
import { statesDatabase } from "./states-city";

/** Drops the states city's database (its server may still hold connections: --force). */
export default function teardown(): void {
  const states = statesDatabase();
  if (!states) return;
  execFileSync("dropdb", [...states.connection, "--if-exists", "--force", states.name], { stdio: "inherit" });
}
