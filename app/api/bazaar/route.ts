import { postBazaar, readBazaar } from "@/lib/doors/posts";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readBazaar, postBazaar);
