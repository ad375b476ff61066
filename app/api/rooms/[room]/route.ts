import { postRoom, readRoom } from "@/lib/doors/posts";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readRoom, postRoom);
