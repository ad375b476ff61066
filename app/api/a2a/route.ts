import { describeA2a } from "@/lib/doors/a2a";
import { serveA2a } from "@/lib/doors/a2a-server";
import { routes } from "@/lib/doors/http";

export const { GET, PUT, PATCH, DELETE } = routes(describeA2a);
export const POST = serveA2a;
