// Test only: runs the WebSocket-to-TCP relay the Neon driver talks to when CITY_NEON_WS_PROXY is
// set, so CI can run the production driver against a local PostgreSQL. Prints its port, then
// relays until it is stopped.
import { startNeonRelay } from "../tests/support/neon-relay";

async function main(): Promise<void> {
  const relay = await startNeonRelay();
  console.log(relay.port);
  const stop = () => void relay.close().then(() => process.exit(0));
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

main().catch((err: unknown) => {
  console.error(`relay failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
