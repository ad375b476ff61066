/** Runs once when a server instance starts: says how client addresses are known (loudly when they are not). */
export async function register() {
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  const { announceAddressMode } = await import("@/lib/doors/client-address");
  try {
    announceAddressMode();
  } catch {
    // A bad environment is refused, with its own message, by the first request that reads it.
  }
}
