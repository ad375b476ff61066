import { liveDoor } from "@/lib/doors/declarations/live/live";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(liveDoor);
