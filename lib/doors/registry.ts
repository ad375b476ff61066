import type { AnyDoor } from "./door";
import { discoveryDoors } from "./discovery";

/** Every door of the city. Each surface (routes, OpenAPI, llms.txt, MCP) is built from this list. */
export const registry: readonly AnyDoor[] = [...discoveryDoors];
