import { readQuarantine } from "@/lib/doors/quarantine";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readQuarantine);
