import { rotateKeyDoor } from "@/lib/doors/keys";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(rotateKeyDoor);
