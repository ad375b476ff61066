import { routes } from "@/lib/doors/pipeline/http";
import { readAndFileWard, readWard } from "@/lib/doors/declarations/ward/ward";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readWard, readAndFileWard);
