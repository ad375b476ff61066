import { identityLog } from "@/lib/city/logs/identity-log";
import { checkLogIdentity } from "@/lib/city/logs/residency-log";
import { withLogAppends } from "@/lib/city/logs/transparency-log";
import { activeSigningKey } from "@/lib/city/signing";
import { recordNonce } from "@/lib/city/keys";
import { type Database } from "@/db/client";
import { isWrite, ownsTransactions } from "@/lib/doors/door";
import { resolveDoorCaller } from "./stages/caller";
import { isConstantDocument } from "./constant-documents";
import type { RequestContext, StageName } from "./context";
import { databaseGuard, reachDatabase } from "./database-guard";
import { guardDoor } from "./stages/guard";
import { fromMemory } from "./stages/memory";
import { parseInput } from "./stages/parse";
import { readRequest } from "./stages/read";
import { isVersionedRead } from "./read-cache";
import { runDoor } from "./stages/run";
import { sendAnswer } from "./stages/send";
import { settleAnswer } from "./stages/settle";
import { signOutgoing } from "./stages/sign";
import { signedCaller } from "./signature";
import { tagAnswer } from "./stages/tag";

interface Stage {
  name: StageName;
  /** Whether this request takes the stage; a stage it does not take is passed by, never entered. */
  takes: (ctx: RequestContext) => boolean;
  run: (ctx: RequestContext) => void | Promise<void>;
}

const overHttp = (ctx: RequestContext) => ctx.http !== null;
const doorRuns = (ctx: RequestContext) => ctx.held === null;

/**
 * A request's way through the city, every surface's: one ordered list of stages over one request
 * context (context.ts), each entered at most once. HTTP doors take it whole (http.ts serveDoor);
 * the MCP door and the A2A bridge hand a door its arguments and take it from `parse` to `settle`
 * (invoke.ts invokeDoor), then answer in their own form. `caller`, `guard` and `run` are one
 * span: a write's transaction when the door is a write whose input parsed and that does not own
 * its transactions (runSpan, below).
 */
export const STAGES: readonly Stage[] = [
  // A constant document reads nothing of the request: it is the same for every one.
  { name: "read", takes: (ctx) => overHttp(ctx) && !isConstantDocument(ctx.door, ctx.http!), run: readRequest },
  { name: "memory", takes: (ctx) => overHttp(ctx) && (isConstantDocument(ctx.door, ctx.http!) || isVersionedRead(ctx.door, ctx.http!)), run: fromMemory },
  { name: "parse", takes: doorRuns, run: parseInput },
  { name: "caller", takes: doorRuns, run: resolveDoorCaller },
  { name: "guard", takes: doorRuns, run: guardDoor },
  { name: "run", takes: doorRuns, run: runDoor },
  { name: "settle", takes: doorRuns, run: settleAnswer },
  { name: "tag", takes: overHttp, run: tagAnswer },
  {
    name: "sign",
    takes: (ctx) => overHttp(ctx) && ctx.door.signsAnswer !== undefined && ctx.outgoing!.status === 200 && !ctx.outgoing!.notModified,
    run: signOutgoing,
  },
  { name: "send", takes: overHttp, run: sendAnswer },
];

/** The stages that run on the span's handle: in a write's transaction, under the citizen's row lock. */
const SPAN: readonly StageName[] = ["caller", "guard", "run"];

/** Takes the stages from `from` to `to` in order. A failure ends the way; one this request was building for memory is handed to those waiting. */
export async function runWay(ctx: RequestContext, from: StageName = "read", to: StageName = "send"): Promise<void> {
  const first = STAGES.findIndex((s) => s.name === from);
  const last = STAGES.findIndex((s) => s.name === to);
  try {
    for (let i = first; i <= last; i++) {
      const stage = STAGES[i]!;
      if (!stage.takes(ctx)) continue;
      if (stage.name === SPAN[0]) {
        await runSpan(ctx, STAGES.slice(i, i + SPAN.length));
        i += SPAN.length - 1;
        continue;
      }
      await enter(ctx, stage);
    }
  } catch (err) {
    ctx.keeper?.fail(err);
    throw err;
  }
}

async function enter(ctx: RequestContext, stage: Stage): Promise<void> {
  ctx.trace.push(stage.name);
  await stage.run(ctx);
}

/**
 * The caller, the guard and the run, on one handle. A write whose input parsed and that does not
 * own its transactions runs them in one transaction: the caller's look-up is its first statement
 * and locks the citizen's row (no round trip of its own), so export, which holds it exclusively,
 * either includes this write or refuses it as exported, and a tier changed a moment ago is the
 * tier read here. The log entries it records are settled once it committed (settle.ts).
 */
async function runSpan(ctx: RequestContext, span: readonly Stage[]): Promise<void> {
  const db = (ctx.db = await reachDatabase());
  const parsed = ctx.parsed!;
  const write = isWrite(ctx.door) && parsed.ok;
  ctx.inTransaction = write && !ownsTransactions(ctx.door, parsed.input, ctx.request);
  // A door with its own transactions, or a malformed request, meets its caller first, as a read does.
  if (!ctx.inTransaction) {
    ctx.handle = db;
    await databaseGuard(() => enter(ctx, span[0]!));
  }
  if (write) await readySigning(db, ctx.now);
  const rest = ctx.inTransaction ? span : span.slice(1);
  const { tickets } = await withLogAppends(() =>
    databaseGuard(() =>
      ctx.inTransaction
        ? db.transaction(async (tx) => {
            ctx.handle = tx as Database;
            for (const stage of rest) await enter(ctx, stage);
          })
        : (async () => {
            for (const stage of rest) await enter(ctx, stage);
          })(),
    ).catch(async (err: unknown) => {
      // A signed write its door refused rolled its nonce back with it: spent again on its own, so
      // the refused request cannot be replayed later (when the door would take it).
      if (ctx.signed) await spendRefusedNonce(ctx);
      throw err;
    }),
  );
  ctx.tickets = tickets;
}

/**
 * A write may sign (a log row's checkpoint): the key is read (on a new city, made) before the
 * write's transaction, so this instance keeps it (activeSigningKey keeps none read inside one). So
 * is each log's identity (recorded on a new city, lib/city/logs/transparency-log/identity.ts),
 * kept by the instance the same way: an append then signs with no statement of its own, or refuses
 * if this instance's configuration is not the log's.
 */
async function readySigning(db: Database, now: Date): Promise<void> {
  await databaseGuard(() => activeSigningKey(db));
  await databaseGuard(() => checkLogIdentity(db, now));
  // The identity log's too (CITY-KEYS/1): a key event's append then signs with no statement of its own.
  await databaseGuard(() => identityLog.checkLogIdentity(db, now));
}

/** Records the nonce of a signed write whose transaction rolled back; its own failure changes no answer (the refusal stands). */
async function spendRefusedNonce(ctx: RequestContext): Promise<void> {
  try {
    const signing = signedCaller(ctx.db!, ctx.request, ctx.now);
    const signed = signing ? (await signing).signed : null;
    if (signed?.nonce) await recordNonce(ctx.db!, { ...signed, nonce: signed.nonce }, ctx.now, ctx.door.currentKeyOnly === true);
  } catch {
    // Replayed meanwhile, key gone, or the database away: the nonce is spent or opens nothing.
  }
}
