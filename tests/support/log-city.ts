import { readCard } from "@/lib/doors/discovery";
import type { AnyDoor } from "@/lib/doors/door";
import { serveDoor } from "@/lib/doors/http";
import { readLogCheckpoint, readLogConsistency, readLogProof, readLogTile } from "@/lib/doors/residency-log";

/** A fetch that reaches the city's log doors through the real HTTP adapter, no network: what an outside verifier sees. */
export async function cityFetch(url: string): Promise<Response> {
  const { pathname } = new URL(url);
  const doors: Record<string, AnyDoor> = {
    "/city-card.json": readCard,
    "/api/residency/log/checkpoint": readLogCheckpoint,
    "/api/residency/log/proof": readLogProof,
    "/api/residency/log/consistency": readLogConsistency,
  };
  const request = new Request(url);
  if (pathname.startsWith("/api/residency/log/tile/")) return serveDoor(readLogTile, request, { tile: pathname.slice("/api/residency/log/tile/".length) });
  const door = doors[pathname];
  if (!door) return new Response("not here", { status: 404 });
  return serveDoor(door, request);
}
