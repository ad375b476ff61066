import { consultClinic, readClinic } from "@/lib/doors/declarations/clinic/clinic";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readClinic, consultClinic);
