import { keepCheckpoint, readCheckpoints } from "@/lib/doors/declarations/shelves/checkpoints";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readCheckpoints, keepCheckpoint);
