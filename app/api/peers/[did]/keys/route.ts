import { readPeerKeys } from "@/lib/doors/declarations/directory/peers";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readPeerKeys);
