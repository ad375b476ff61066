import { sealDoor } from "@/lib/doors/declarations/shelves/seals";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(sealDoor);
