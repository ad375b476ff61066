import { createServer } from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";

/**
 * Stands in for Neon's WebSocket proxy: each WebSocket the Neon driver opens is forwarded to the
 * PostgreSQL server named in its `address` query parameter. Only loopback targets are forwarded.
 */
export async function startNeonRelay(port = 0): Promise<{ port: number; close: () => Promise<void> }> {
  // An HTTP server of our own, so that close() can end every connection it holds: a handshake still
  // in progress is no WebSocket client yet, and an HTTP server's close waits for it (a fault test
  // that stopped the relay under load once waited past its 60 s for such a connection).
  const http = createServer();
  const server = new WebSocketServer({ server: http });
  server.on("connection", (socket, request) => {
    const address = new URL(request.url ?? "/", "http://relay").searchParams.get("address") ?? "";
    const [host, portText] = address.split(":");
    if (!host || !["127.0.0.1", "localhost", "::1"].includes(host)) {
      socket.close(1008, "only loopback targets are relayed");
      return;
    }
    const tcp = net.connect({ host, port: Number(portText) || 5432 });
    const pending: Buffer[] = [];
    tcp.on("connect", () => {
      for (const chunk of pending.splice(0)) tcp.write(chunk);
    });
    socket.on("message", (data: Buffer) => (tcp.connecting ? pending.push(data) : tcp.write(data)));
    tcp.on("data", (chunk) => socket.send(chunk));
    tcp.on("close", () => socket.close());
    tcp.on("error", () => socket.close());
    socket.on("close", () => tcp.destroy());
    socket.on("error", () => tcp.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, "127.0.0.1", () => resolve());
  });
  return {
    port: (http.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close();
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
