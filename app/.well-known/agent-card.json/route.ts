import { readAgentCard } from "@/lib/doors/discovery";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readAgentCard);
