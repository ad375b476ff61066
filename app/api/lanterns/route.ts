import { lightLantern, putOutLanternDoor, readLanterns } from "@/lib/doors/lanterns";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readLanterns, lightLantern, putOutLanternDoor);
