/**
 * Runs once when a server instance starts: says how client addresses are known (loudly when they
 * are not), and whether this instance's log origin and key are the database's log identity (loudly
 * when they are not: it then refuses to append; lib/city/logs/transparency-log/identity.ts), for both logs.
 */
export async function register() {
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  const { announceAddressMode } = await import("@/lib/doors/pipeline/client-address");
  try {
    announceAddressMode();
  } catch {
    // A bad environment is refused, with its own message, by the first request that reads it.
  }
  if (process.env.NEXT_PHASE === "phase-production-build") return;
  const [{ getDb }, { announceLogIdentity }, { identityLog }, { logFailure }] = await Promise.all([
    import("@/lib/city/database"),
    import("@/lib/city/logs/residency-log"),
    import("@/lib/city/logs/identity-log"),
    import("@/lib/logger"),
  ]);
  // Not awaited: a slow or absent database delays no start; the first append checks again.
  void getDb()
    .then(async (db) => {
      await announceLogIdentity(db);
      await identityLog.announceLogIdentity(db);
    })
    .catch((err: unknown) => logFailure("log identity at start", err));
}
