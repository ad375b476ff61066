import { postPlaza, readPlaza } from "@/lib/doors/declarations/posts/posts";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readPlaza, postPlaza);
