import { readInboxDoor, sendMessageDoor } from "@/lib/doors/mail";
import { routes } from "@/lib/doors/http";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes(readInboxDoor, sendMessageDoor);
