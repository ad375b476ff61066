import { readLogCheckpoint } from "@/lib/doors/log";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readLogCheckpoint);
