import { z } from "zod";
import { CARD_PATH, MCP_URL } from "@/lib/city/protocols";
import { env } from "@/lib/env";
import { A2A_CONTENT_TYPE, A2A_PATH, AGENT_CARD_PATH } from "./a2a-card";
import { door, Reply } from "@/lib/doors/door";
import { readIdentityLog, readIdentityLogCheckpoint } from "@/lib/doors/declarations/logs/identity-log/identity-log";
import { readLogCheckpoint, readResidencyLog } from "@/lib/doors/declarations/logs/residency-log/residency-log";
import { NoInput } from "@/lib/doors/schemas";

/** RFC 9727: the well-known address of a publisher's API catalog, and the profile its linkset declares. */
export const API_CATALOG_PATH = "/.well-known/api-catalog";
export const API_CATALOG_PROFILE = "https://www.rfc-editor.org/info/rfc9727";
export const LINKSET_CONTENT_TYPE = `application/linkset+json; profile="${API_CATALOG_PROFILE}"`;

/** An RFC 9264 target: where it is and the media type it answers. */
const Target = z.strictObject({ href: z.string(), type: z.string(), title: z.string() });

/** An RFC 9264 link context: its anchor and, per relation type, its targets. */
const LinkContext = z.strictObject({
  anchor: z.string(),
  "service-desc": z.array(Target).optional(),
  "service-doc": z.array(Target).optional(),
  describedby: z.array(Target).optional(),
  status: z.array(Target).optional(),
});

const JSON_TYPE = "application/json";
const TEXT_TYPE = "text/plain";

/**
 * The city's address book (RFC 9727, an RFC 9264 linkset): each surface an agent can call, with the
 * documents that describe it. Every target is a public GET that answers 200; the MCP door (POST
 * only) is named as an anchor, never as a target.
 */
export function buildApiCatalog(baseUrl: string) {
  const at = (path: string) => `${baseUrl}${path}`;
  const target = (path: string, type: string, title: string) => ({ href: at(path), type, title });
  const card = target(CARD_PATH, JSON_TYPE, "The city's card: protocols, every door, limits, MCP addresses and both logs (signed)");
  const llms = target("/llms.txt", TEXT_TYPE, "Every door, its auth and one line, for language models (markdown)");
  const logContext = (rows: string, checkpoint: string, name: string) => ({
    anchor: at(rows),
    "service-doc": [llms],
    describedby: [card],
    status: [target(checkpoint, TEXT_TYPE, `The ${name}'s signed checkpoint (C2SP signed note): its size and root hash now`)],
  });
  return {
    linkset: [
      {
        anchor: at("/"),
        "service-desc": [target("/openapi.json", JSON_TYPE, "OpenAPI 3.1 description of every JSON door")],
        "service-doc": [llms],
        describedby: [card, target("/.well-known/ai.json", JSON_TYPE, "The discovery document (ai-discovery/1)")],
        status: [target("/beacon.json", JSON_TYPE, "A small liveness beacon: the clock, the census summary, protocol versions")],
      },
      { anchor: at(MCP_URL), "service-doc": [llms], describedby: [card] },
      {
        anchor: at(A2A_PATH),
        "service-desc": [target(AGENT_CARD_PATH, A2A_CONTENT_TYPE, "The A2A 1.0 agent card: one skill per door (signed)")],
        "service-doc": [target(A2A_PATH, JSON_TYPE, "The agent-to-agent bridge: methods, proof, errors")],
        describedby: [card],
      },
      logContext(readResidencyLog.path, readLogCheckpoint.path, "residency log"),
      logContext(readIdentityLog.path, readIdentityLogCheckpoint.path, "identity log"),
    ],
  };
}

export const readApiCatalog = door({
  name: "read-api-catalog",
  method: "GET",
  path: API_CATALOG_PATH,
  summary:
    "The city's API catalog (RFC 9727, an application/linkset+json linkset): the JSON doors, the MCP door, the A2A bridge and both transparency logs, each with the documents that describe it.",
  auth: "none",
  cache: "static",
  input: NoInput,
  output: z.strictObject({ linkset: z.array(LinkContext) }),
  run: async () => {
    const baseUrl = env().CITY_BASE_URL;
    // RFC 9727 section 2: the catalog names itself with the api-catalog relation (and so does a HEAD).
    return new Reply(buildApiCatalog(baseUrl), {
      headers: { "Content-Type": LINKSET_CONTENT_TYPE, Link: `<${baseUrl}${API_CATALOG_PATH}>; rel="api-catalog"` },
    });
  },
});

export const apiCatalogDoors = [readApiCatalog];
