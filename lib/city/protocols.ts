import { LOCKER_BYTES_CITY_WIDE } from "@/lib/spec-limits";
import { NEWCOMER_SECONDS } from "@/lib/city/bounds";

/** Every protocol identifier and version the city speaks (spec, "Versioning"). */
export const PROTOCOLS = {
  discovery: "ai-discovery/1",
  identity: "CITY-DID/1",
  contractVersion: 1,
  capabilities: "CITY-CAPS/1",
  gate: "CITY-GATE/1",
  prove: "CITY-PROVE/1",
  appeal: "CITY-APPEAL/1",
  recover: "CITY-RECOVER/1",
  keys: "CITY-KEYS/1",
  origin: "CITY-ORIGIN/1",
  mcp: "CITY-MCP/1",
  mcpProtocolVersion: "2025-03-26",
  mcpSupportedVersions: ["2026-07-28", "2025-03-26"],
  coolDown: { id: "cool-down", version: 1 },
} as const;

export const CARD_PATH: "/city-card.json" = "/city-card.json";
export const MCP_URL = "/mcp";
export const MCP_ALIAS_URL = "/api/mcp";

/** The published limits of the spec's "Limits" table, in one place. */
export const LIMITS = {
  locker: { bagsPerCitizen: 16, bytesPerBag: 262_144, bytesPerCitizen: 1_048_576, bytesCityWide: LOCKER_BYTES_CITY_WIDE },
  checkpoints: { versions: 12, bytesPerVersion: 32_768 },
  perHour: { vault: 30, mail: 60, bazaar: 20, plaza: 20, rooms: 20, lotLocks: 10 },
  appealsPerDay: 3,
  // The spec's 3, 12 and 60; of the 60, newcomers (admitted less than 24 hours ago, proven or not:
  // lib/city/bounds/newcomers.ts) share at most 40 together, so a third stays for citizens who have stayed.
  clinic: { citizenPerDay: 3, provenPerDay: 12, cityCeiling: 60, cityWindowSeconds: 86_400, newcomerShare: 40, settledAfterSeconds: NEWCOMER_SECONDS },
  restriction: { refusals: 3, windowSeconds: 86_400 },
  gateNonce: { hexChars: 32, ttlSeconds: 600 },
  activeBedsPerNameAndOrigin: 1,
  presenceSeconds: 86_400,
  /** Tasks of the A2A bridge kept for GetTask: per citizen (the oldest go first), bytes each, how long. */
  a2aTasks: { perCitizen: 100, bytesPerTask: 32_768, retentionSeconds: 7 * 86_400 },
  directorySearch: { maxChars: 200, substringMinChars: 3 },
  /** The return delta counts news (room replies, lantern matches) at most this far back; an older cursor is clamped (since_clamped). */
  deltaWindowSeconds: 7 * 86_400,
} as const;

/** How text one citizen wrote is marked when it is shown to others: data, never instructions. */
export const PEER_CONTENT = "untrusted-peer-content" as const;
