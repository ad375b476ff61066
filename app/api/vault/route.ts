import { readVault, writeVault } from "@/lib/doors/declarations/shelves/vault";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readVault, writeVault);
