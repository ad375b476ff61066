import { a2aRoutes } from "@/lib/doors/surfaces/a2a-server";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = a2aRoutes();
