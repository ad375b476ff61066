import net from "node:net";
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";

/**
 * Stands in for Neon's WebSocket proxy: each WebSocket the Neon driver opens is forwarded to the
 * PostgreSQL server named in its `address` query parameter. Only loopback targets are forwarded.
 */
export async function startNeonRelay(port = 0): Promise<{ port: number; close: () => Promise<void> }> {
  const server = new WebSocketServer({ host: "127.0.0.1", port });
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
  await new Promise<void>((resolve) => server.on("listening", () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  };
}
