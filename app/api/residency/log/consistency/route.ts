import { readLogConsistency } from "@/lib/doors/declarations/logs/residency-log/residency-log";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readLogConsistency);
