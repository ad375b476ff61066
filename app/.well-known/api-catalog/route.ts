import { readApiCatalog } from "@/lib/doors/api-catalog";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readApiCatalog);
