import { readLockerBag } from "@/lib/doors/declarations/shelves/locker";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readLockerBag);
