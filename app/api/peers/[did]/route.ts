import { readPeer } from "@/lib/doors/peers";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readPeer);
