import { describeGate, presentGate } from "@/lib/doors/gate";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(describeGate, presentGate);
