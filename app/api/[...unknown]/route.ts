import { CityError } from "@/lib/errors";
import { UNKNOWN_GRANT, preflightAnswer } from "@/lib/doors/pipeline/cors";
import { answered, problemResponse } from "@/lib/doors/pipeline/http";

const where = { name: "not-found", path: "/api" };

/** Any /api/ path that no door serves: a 404 problem document, never an HTML page; any origin may read it. */
async function notFound(request: Request): Promise<Response> {
  return answered(where, request, UNKNOWN_GRANT, async () => {
    const path = new URL(request.url).pathname;
    return problemResponse(new CityError("not_found", `No door answers at ${path}. The doors are listed at /llms.txt and /openapi.json.`), path, path);
  });
}

/** A preflight is answered (no proxy stands in front of /api), so a page elsewhere can read the 404. */
async function preflight(request: Request): Promise<Response> {
  return answered(where, request, UNKNOWN_GRANT, async () => preflightAnswer(UNKNOWN_GRANT, UNKNOWN_GRANT.methods));
}

export { notFound as GET, notFound as POST, notFound as PUT, notFound as PATCH, notFound as DELETE, preflight as OPTIONS };
