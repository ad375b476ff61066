import { a2aDoors } from "@/lib/doors/surfaces/a2a";
import { apiCatalogDoors } from "@/lib/doors/surfaces/api-catalog";
import { checkpointDoors } from "@/lib/doors/declarations/shelves/checkpoints";
import { clinicDoors } from "@/lib/doors/declarations/clinic/clinic";
import type { AnyDoor } from "./door";
import { discoveryDoors } from "@/lib/doors/surfaces/discovery";
import { gateDoors } from "@/lib/doors/declarations/gate/gate";
import { identityLogDoors } from "@/lib/doors/declarations/logs/identity-log/identity-log";
import { lanternDoors } from "@/lib/doors/declarations/posts/lanterns";
import { liveDoors } from "@/lib/doors/declarations/live/live";
import { lockerDoors } from "@/lib/doors/declarations/shelves/locker";
import { lotDoors } from "@/lib/doors/declarations/shelves/lots";
import { mailDoors } from "@/lib/doors/declarations/mail/mail";
import { peerDoors } from "@/lib/doors/declarations/directory/peers";
import { postDoors } from "@/lib/doors/declarations/posts/posts";
import { quarantineDoors } from "@/lib/doors/declarations/quarantine/quarantine";
import { keyDoors } from "@/lib/doors/declarations/keys/keys";
import { originDoors } from "@/lib/doors/declarations/origin/origin";
import { recoverDoors } from "@/lib/doors/declarations/keys/recover";
import { residencyDoors } from "@/lib/doors/declarations/residency/residency";
import { residencyLogDoors } from "@/lib/doors/declarations/logs/residency-log/residency-log";
import { sealDoors } from "@/lib/doors/declarations/shelves/seals";
import { tierDoors } from "@/lib/doors/declarations/restriction/tiers";
import { tokenDoors } from "@/lib/doors/declarations/keys/tokens";
import { vaultDoors } from "@/lib/doors/declarations/shelves/vault";
import { wardDoors } from "@/lib/doors/declarations/ward/ward";

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
