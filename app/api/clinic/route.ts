import { consultClinic, readClinic } from "@/lib/doors/clinic";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readClinic, consultClinic);
