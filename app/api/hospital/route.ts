import { routes } from "@/lib/doors/http";
import { readAndFileWard, readWard } from "@/lib/doors/ward";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readWard, readAndFileWard);
