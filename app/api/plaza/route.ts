import { postPlaza, readPlaza } from "@/lib/doors/posts";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readPlaza, postPlaza);
