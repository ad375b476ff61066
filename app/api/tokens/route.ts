import { mintToken, revokeToken } from "@/lib/doors/tokens";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(mintToken, revokeToken);
