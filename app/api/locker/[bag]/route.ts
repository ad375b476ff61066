import { readLockerBag } from "@/lib/doors/locker";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readLockerBag);
