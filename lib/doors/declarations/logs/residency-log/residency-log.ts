import { LOG_EVENTS } from "@/db/schema";
import { residencyLog } from "@/lib/city/logs/residency-log";
import { logDoors } from "@/lib/doors/declarations/logs/transparency-log/transparency-log";

export { FULL_TILE_CACHE, PARTIAL_TILE_CACHE } from "@/lib/doors/declarations/logs/transparency-log/transparency-log";

/** The residency log's doors (docs/log.md), under /api/residency/log. */
const residency = logDoors({
  face: residencyLog,
  events: LOG_EVENTS,
  prefix: "/api/residency/log",
  scope: "residency_log",
  names: {
    page: "read-residency-log",
    verify: "verify-residency-log",
    checkpoint: "read-log-checkpoint",
    proof: "read-log-proof",
    consistency: "read-log-consistency",
    tile: "read-log-tile",
    sync: "sync-log-witnesses",
  },
  title: "residency log",
  pageSummary: "The append-only residency log (admit, exit, return, export), oldest first, hash-chained; page with ?after=<seq>&limit=<n>.",
  cardField: "log",
});

export const LOG_PATHS = residency.paths;
export const {
  readPage: readResidencyLog,
  verify: verifyResidencyLog,
  readCheckpoint: readLogCheckpoint,
  readProof: readLogProof,
  readConsistency: readLogConsistency,
  readTile: readLogTile,
  syncWitnesses: syncLogWitnesses,
  doors: residencyLogDoors,
} = residency;
