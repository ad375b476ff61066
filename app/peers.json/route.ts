import { readPeers } from "@/lib/doors/declarations/directory/peers";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readPeers);
