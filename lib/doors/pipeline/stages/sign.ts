import { getDb } from "@/lib/city/database";
import type { RequestContext } from "../context";
import { signAnswer } from "../signature";

/**
 * Stage `sign`: a door that signs its answers (a citizen's key directory) signs the 200's exact
 * bytes with the city's key (RFC 9421, signature.ts signAnswer). A 304 carries no body to sign.
 */
export async function signOutgoing(ctx: RequestContext): Promise<void> {
  const outgoing = ctx.outgoing!;
  const text = typeof outgoing.body === "string" ? outgoing.body : Buffer.from(outgoing.body).toString("utf8");
  const signature = await signAnswer(await getDb(), text, ctx.http!, ctx.door.signsAnswer!.tag);
  for (const [name, value] of Object.entries(signature)) outgoing.headers.set(name, value);
}
