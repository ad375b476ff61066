import { readIdentityLog } from "@/lib/doors/declarations/logs/identity-log/identity-log";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readIdentityLog);
