import { recoverDoor } from "@/lib/doors/declarations/keys/recover";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(recoverDoor);
