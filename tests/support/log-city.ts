import { readCard } from "@/lib/doors/surfaces/discovery";
import type { AnyDoor } from "@/lib/doors/door";
import { serveDoor } from "@/lib/doors/pipeline/http";
import {
  readIdentityLogCheckpoint,
  readIdentityLogConsistency,
  readIdentityLogProof,
  readIdentityLogTile,
} from "@/lib/doors/declarations/logs/identity-log/identity-log";
import { readLogCheckpoint, readLogConsistency, readLogProof, readLogTile } from "@/lib/doors/declarations/logs/residency-log/residency-log";

/** A fetch that reaches the city's log doors (both logs) through the real HTTP adapter, no network: what an outside verifier sees. */
export async function cityFetch(url: string): Promise<Response> {
  const { pathname } = new URL(url);
  const doors: Record<string, AnyDoor> = {
    "/city-card.json": readCard,
    "/api/residency/log/checkpoint": readLogCheckpoint,
    "/api/residency/log/proof": readLogProof,
    "/api/residency/log/consistency": readLogConsistency,
    "/api/identity/log/checkpoint": readIdentityLogCheckpoint,
    "/api/identity/log/proof": readIdentityLogProof,
    "/api/identity/log/consistency": readIdentityLogConsistency,
  };
  const request = new Request(url);
  for (const [prefix, tile] of [
    ["/api/residency/log/tile/", readLogTile],
    ["/api/identity/log/tile/", readIdentityLogTile],
  ] as const) {
    if (pathname.startsWith(prefix)) return serveDoor(tile, request, { tile: pathname.slice(prefix.length) });
  }
  const door = doors[pathname];
  if (!door) return new Response("not here", { status: 404 });
  return serveDoor(door, request);
}
