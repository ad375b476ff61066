import { a2aDoors } from "./a2a";
import { apiCatalogDoors } from "./api-catalog";
import { checkpointDoors } from "./checkpoints";
import { clinicDoors } from "./clinic";
import type { AnyDoor } from "./door";
import { discoveryDoors } from "./discovery";
import { gateDoors } from "./gate";
import { identityLogDoors } from "./identity-log";
import { lanternDoors } from "./lanterns";
import { liveDoors } from "./live";
import { lockerDoors } from "./locker";
import { lotDoors } from "./lots";
import { mailDoors } from "./mail";
import { peerDoors } from "./peers";
import { postDoors } from "./posts";
import { quarantineDoors } from "./quarantine";
import { keyDoors } from "./keys";
import { originDoors } from "./origin";
import { recoverDoors } from "./recover";
import { residencyDoors } from "./residency";
import { residencyLogDoors } from "./residency-log";
import { sealDoors } from "./seals";
import { tierDoors } from "./tiers";
import { tokenDoors } from "./tokens";
import { vaultDoors } from "./vault";
import { wardDoors } from "./ward";

/** Every door of the city. Each surface (routes, OpenAPI, llms.txt, MCP) is built from this list. */
export const registry: readonly AnyDoor[] = [
  ...discoveryDoors,
  ...apiCatalogDoors,
  ...gateDoors,
  ...residencyDoors,
  ...residencyLogDoors,
  ...identityLogDoors,
  ...liveDoors,
  ...peerDoors,
  ...tokenDoors,
  ...recoverDoors,
  ...keyDoors,
  ...originDoors,
  ...tierDoors,
  ...lockerDoors,
  ...checkpointDoors,
  ...vaultDoors,
  ...mailDoors,
  ...quarantineDoors,
  ...postDoors,
  ...lanternDoors,
  ...lotDoors,
  ...sealDoors,
  ...a2aDoors,
  ...wardDoors,
  ...clinicDoors,
];
