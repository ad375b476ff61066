import { liveDoor } from "@/lib/doors/live";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(liveDoor);
