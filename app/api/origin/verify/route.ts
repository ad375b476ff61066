import { dropOriginDoor, verifyOriginDoor } from "@/lib/doors/declarations/origin/origin";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(verifyOriginDoor, dropOriginDoor);
