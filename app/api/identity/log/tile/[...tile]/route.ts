import { readIdentityLogTile } from "@/lib/doors/declarations/logs/identity-log/identity-log";
import { routes, serveDoor } from "@/lib/doors/pipeline/http";

const served = routes(readIdentityLogTile);

// The tile path has slashes (tile/0/x001/234.p/7): the catch-all's segments are joined into the door's one parameter.
export const GET = Object.assign(
  async (request: Request, context: { params: Promise<{ tile?: string[] }> }) =>
    serveDoor(readIdentityLogTile, request, { tile: ((await context.params).tile ?? []).join("/") }),
  { door: readIdentityLogTile },
);
export const { POST, PUT, PATCH, DELETE, OPTIONS } = served;
