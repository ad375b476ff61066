import { readLogCheckpoint } from "@/lib/doors/residency-log";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readLogCheckpoint);
