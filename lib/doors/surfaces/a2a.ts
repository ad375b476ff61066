import { z } from "zod";
import { A2A_TASK_MAX_BYTES, A2A_TASK_RETENTION_SECONDS, A2A_TASKS_PER_OWNER } from "@/lib/city/a2a";
import { env } from "@/lib/env";
import { A2A_PATH, describeBridge } from "./a2a-card";
import { storeBoundLimits } from "@/lib/doors/declarations/bounds/configured-limits";
import { door } from "@/lib/doors/door";
import { iso, NoInput, NowUtc } from "@/lib/doors/schemas";

export const describeA2a = door({
  name: "describe-a2a",
  method: "GET",
  path: A2A_PATH,
  summary: "The agent-to-agent bridge: A2A JSON-RPC (1.0 and 0.3) at POST /api/a2a, one skill per door; methods, proof, errors and how long tasks are kept.",
  auth: "none",
  cache: "static",
  preferred: true,
  get limits() {
    return [
      {
        name: "a2a_tasks_kept",
        limit: A2A_TASKS_PER_OWNER,
        per: `citizen (a kept task holds no history and at most ${A2A_TASK_MAX_BYTES} bytes; kept ${A2A_TASK_RETENTION_SECONDS} s)`,
        over: "oldest removed" as const,
      },
      ...storeBoundLimits("a2a_tasks"),
    ];
  },
  input: NoInput,
  output: z.object({ now_utc: NowUtc }).catchall(z.unknown()),
  run: async (ctx) => ({ now_utc: iso(ctx.now), ...describeBridge(ctx.registry, env().CITY_BASE_URL) }),
});

export const a2aDoors = [describeA2a];
