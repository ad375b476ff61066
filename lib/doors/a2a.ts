import { z } from "zod";
import { env } from "@/lib/env";
import { A2A_PATH, describeBridge } from "./a2a-card";
import { door } from "./door";
import { iso, NoInput, NowUtc } from "./schemas";

export const describeA2a = door({
  name: "describe-a2a",
  method: "GET",
  path: A2A_PATH,
  summary: "The agent-to-agent bridge: A2A JSON-RPC (1.0 and 0.3) at POST /api/a2a, one skill per door; methods, proof, errors and how long tasks are kept.",
  auth: "none",
  cache: "static",
  preferred: true,
  input: NoInput,
  output: z.object({ now_utc: NowUtc }).catchall(z.unknown()),
  run: async (ctx) => ({ now_utc: iso(ctx.now), ...describeBridge(ctx.registry, env().CITY_BASE_URL) }),
});

export const a2aDoors = [describeA2a];
