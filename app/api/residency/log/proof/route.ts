import { readLogProof } from "@/lib/doors/log";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readLogProof);
