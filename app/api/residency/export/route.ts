import { exportResidency } from "@/lib/doors/declarations/residency/residency";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(exportResidency);
