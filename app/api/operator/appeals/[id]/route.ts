import { decideAppealDoor } from "@/lib/doors/tiers";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(decideAppealDoor);
