import { readChallenge, submitProof } from "@/lib/doors/declarations/restriction/tiers";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readChallenge, submitProof);
