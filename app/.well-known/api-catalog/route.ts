import { readApiCatalog } from "@/lib/doors/surfaces/api-catalog";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readApiCatalog);
