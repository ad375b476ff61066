import { dropOriginDoor, verifyOriginDoor } from "@/lib/doors/origin";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(verifyOriginDoor, dropOriginDoor);
