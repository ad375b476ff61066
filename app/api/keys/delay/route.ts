import { setRecoveryDelayDoor } from "@/lib/doors/declarations/keys/keys";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(setRecoveryDelayDoor);
