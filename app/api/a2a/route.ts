import { a2aRoutes } from "@/lib/doors/a2a-server";

export const { GET, POST, PUT, PATCH, DELETE } = a2aRoutes();
