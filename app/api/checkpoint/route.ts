import { keepCheckpoint, readCheckpoints } from "@/lib/doors/checkpoints";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readCheckpoints, keepCheckpoint);
