import { describeGate, presentGate } from "@/lib/doors/declarations/gate/gate";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(describeGate, presentGate);
