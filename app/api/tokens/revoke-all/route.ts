import { revokeAllTokens } from "@/lib/doors/declarations/keys/tokens";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(revokeAllTokens);
