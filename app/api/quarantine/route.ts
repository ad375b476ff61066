import { readQuarantine } from "@/lib/doors/declarations/quarantine/quarantine";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readQuarantine);
