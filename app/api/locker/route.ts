import { keepLockerBag, readLocker } from "@/lib/doors/declarations/shelves/locker";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readLocker, keepLockerBag);
