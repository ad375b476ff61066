import { a2aRoutes } from "@/lib/doors/a2a-server";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = a2aRoutes();
