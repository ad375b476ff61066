import { readVault, writeVault } from "@/lib/doors/vault";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readVault, writeVault);
