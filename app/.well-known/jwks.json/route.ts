import { readJwks } from "@/lib/doors/surfaces/discovery";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readJwks);
