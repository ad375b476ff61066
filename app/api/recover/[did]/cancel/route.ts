import { cancelRecoveryDoor } from "@/lib/doors/recover";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(cancelRecoveryDoor);
