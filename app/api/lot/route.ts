import { lockLot, readLots } from "@/lib/doors/declarations/shelves/lots";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readLots, lockLot);
