import { markMailRead } from "@/lib/doors/declarations/mail/mail";
import { routes } from "@/lib/doors/pipeline/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(markMailRead);
