import { serveMcp } from "@/lib/doors/surfaces/mcp";

// The MCP door (streamable HTTP); /mcp and /api/mcp are served by the same handler.
export { serveMcp as GET, serveMcp as POST, serveMcp as PUT, serveMcp as PATCH, serveMcp as DELETE, serveMcp as OPTIONS };
