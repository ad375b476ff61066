import { readSeal } from "@/lib/doors/seals";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readSeal);
