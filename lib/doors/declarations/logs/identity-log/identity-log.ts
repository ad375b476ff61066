import { IDENTITY_EVENTS } from "@/db/schema";
import { identityLog } from "@/lib/city/logs/identity-log";
import { logDoors } from "@/lib/doors/declarations/logs/transparency-log/transparency-log";

/** The identity log's doors (CITY-KEYS/1, docs/keys.md): the residency log's, under /api/identity/log. */
const identity = logDoors({
  face: identityLog,
  events: IDENTITY_EVENTS,
  prefix: "/api/identity/log",
  scope: "identity_log",
  names: {
    page: "read-identity-log",
    verify: "verify-identity-log",
    checkpoint: "read-identity-log-checkpoint",
    proof: "read-identity-log-proof",
    consistency: "read-identity-log-consistency",
    tile: "read-identity-log-tile",
    sync: "sync-identity-log-witnesses",
  },
  title: "identity log",
  pageSummary:
    "The append-only identity log (every change to a citizen's keys: key-bound, key-rotated, next-keys-committed, secret-reset, recovery-opened/held/cancelled/completed, delay-set; and every origin proven or dropped, CITY-ORIGIN/1: origin-proven, origin-dropped), oldest first, hash-chained; page with ?after=<seq>&limit=<n>.",
  cardField: "identity_log",
});

export const IDENTITY_LOG_PATHS = identity.paths;
export const {
  readPage: readIdentityLog,
  verify: verifyIdentityLog,
  readCheckpoint: readIdentityLogCheckpoint,
  readProof: readIdentityLogProof,
  readConsistency: readIdentityLogConsistency,
  readTile: readIdentityLogTile,
  syncWitnesses: syncIdentityLogWitnesses,
  doors: identityLogDoors,
} = identity;
