import { readLogTile } from "@/lib/doors/declarations/logs/residency-log/residency-log";
import { routes, serveDoor } from "@/lib/doors/pipeline/http";

const served = routes(readLogTile);

// The tile path has slashes (tile/0/x001/234.p/7): the catch-all's segments are joined into the door's one parameter.
export const GET = Object.assign(
  async (request: Request, context: { params: Promise<{ tile?: string[] }> }) =>
    serveDoor(readLogTile, request, { tile: ((await context.params).tile ?? []).join("/") }),
  { door: readLogTile },
);
export const { POST, PUT, PATCH, DELETE, OPTIONS } = served;
