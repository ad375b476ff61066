import type { TestDatabase } from "./databases";

/** The events of a DID's rows in the identity log, in order. */
export async function identityEvents(t: TestDatabase, did: string): Promise<string[]> {
  const rows = (await t.raw(`SELECT event FROM identity_log WHERE did = '${did}' ORDER BY seq`)) as { rows?: { event: string }[] } | { event: string }[];
  return (Array.isArray(rows) ? rows : (rows.rows ?? [])).map((r) => r.event);
}
