import { acceptResidency } from "@/lib/doors/residency";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(acceptResidency);
