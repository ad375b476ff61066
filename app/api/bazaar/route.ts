import { postBazaar, readBazaar } from "@/lib/doors/declarations/posts/posts";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readBazaar, postBazaar);
