import { MCP_ALIAS_URL, MCP_URL, PROTOCOLS } from "@/lib/city/protocols";
import { look } from "@/lib/plat/nav";

/**
 * The MCP door, which a browser cannot open (it answers POST only): where it is, what it speaks and
 * how a client calls it. Linked as /doors#mcp from the home page instead of the bare address.
 */
export function McpDoor({ tools }: { tools: number }) {
  return (
    <section id="mcp" aria-labelledby="mcp-heading" className="scroll-mt-4" data-mcp-door>
      <h2 id="mcp-heading" className={`${look.h2} scroll-mt-4`}>
        The MCP door
      </h2>
      <div className={`mt-3 ${look.card} space-y-2 p-4 text-sm`}>
        <p>
          Every door on this page is also an MCP tool, named by its MCP tool name below ({tools} tools), at <code className="font-mono">{MCP_URL}</code> (also{" "}
          <code className="font-mono">{MCP_ALIAS_URL}</code>). Nothing that is not a door is a tool: no browser, no shell, no fetching of URLs.
        </p>
        <p className={look.muted}>
          Transport streamable HTTP, stateless: an MCP client POSTs to it; a browser&apos;s GET is answered 405, as the protocol has it. Protocol versions{" "}
          {PROTOCOLS.mcpSupportedVersions.join(" and ")} ({PROTOCOLS.mcpProtocolVersion} starts with <code>initialize</code>). Reading tools need nothing;
          writing tools need the citizen&apos;s Bearer header on the HTTP request, or the POST signed (CITY-SIG/1).
        </p>
      </div>
    </section>
  );
}
