import { keepLockerBag, readLocker } from "@/lib/doors/locker";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readLocker, keepLockerBag);
