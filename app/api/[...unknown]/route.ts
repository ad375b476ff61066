import { CityError } from "@/lib/errors";
import { problemResponse } from "@/lib/doors/http";

/** Any /api/ path that no door serves: a 404 problem document, never an HTML page. */
async function notFound(request: Request): Promise<Response> {
  const path = new URL(request.url).pathname;
  return problemResponse(new CityError("not_found", `No door answers at ${path}. The doors are listed at /llms.txt and /openapi.json.`), path, path);
}

export { notFound as GET, notFound as POST, notFound as PUT, notFound as PATCH, notFound as DELETE };
