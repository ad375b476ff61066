import { keepLockerBag, readLocker } from "@/lib/doors/locker";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE } = routes(readLocker, keepLockerBag);
