import { lockLot, readLots } from "@/lib/doors/lots";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readLots, lockLot);
