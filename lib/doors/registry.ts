import type { AnyDoor } from "./door";
import { discoveryDoors } from "./discovery";
import { gateDoors } from "./gate";
import { peerDoors } from "./peers";
import { residencyDoors } from "./residency";
import { tokenDoors } from "./tokens";

/** Every door of the city. Each surface (routes, OpenAPI, llms.txt, MCP) is built from this list. */
export const registry: readonly AnyDoor[] = [...discoveryDoors, ...gateDoors, ...residencyDoors, ...peerDoors, ...tokenDoors];
