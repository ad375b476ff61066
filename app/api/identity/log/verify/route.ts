import { verifyIdentityLog } from "@/lib/doors/identity-log";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(verifyIdentityLog);
