import { lightLantern, putOutLanternDoor, readLanterns } from "@/lib/doors/declarations/posts/lanterns";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readLanterns, lightLantern, putOutLanternDoor);
