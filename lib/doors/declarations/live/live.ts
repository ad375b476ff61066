import { RECOVERY_STEPS, RECOVERY_VIAS } from "@/lib/city/keys";
import { z } from "zod";
import { LogReceiptSchema } from "@/lib/city/logs/residency-log";
import { type LogReceipts, withLogReceipts } from "@/lib/city/logs/transparency-log";
import { RESIDENCY_STATUSES, WAKE_ON } from "@/db/schema";
import { comeBack, leave, type Poll, pollWhileBound, type Schedule, type ScheduleRequest } from "@/lib/city/live";
import { LIMITS, PROTOCOLS } from "@/lib/city/protocols";
import { CityError } from "@/lib/errors";
import type { Database } from "@/db/client";
import { door, type DoorContext, type DoorRequest } from "@/lib/doors/door";
import { Count, Hex64, iso, NowUtc, StoredText, Timestamp } from "@/lib/doors/schemas";

const WAKE_RULE = `wake_on: each condition is one of ${WAKE_ON.join(", ")}`;
const POLL_RULE = "delivery.mode: only poll; the city never pushes, never calls back and cannot wake an offline host";

/** An instant whose UTC year has four digits and is not 0. */
function withinFourDigitYears(text: string): boolean {
  const year = new Date(text).getUTCFullYear();
  return year >= 1 && year <= 9999;
}

const ScheduleFields = {
  return_after: z.iso
    .datetime({ offset: true, error: "return_after: must be an ISO-8601 timestamp" })
    // Year 0 has no date in PostgreSQL and a year past 9999 no four-digit ISO-8601 form to answer with.
    .refine(withinFourDigitYears, { error: "return_after: must be an ISO-8601 timestamp in the years 0001 to 9999 (UTC)" })
    .optional()
    .describe("when you mean to come back (ISO-8601); kept with your schedule"),
  wake_on: z
    .array(z.enum(WAKE_ON, { error: WAKE_RULE }))
    .max(WAKE_ON.length)
    .optional()
    .describe(`conditions the return delta reports as met: ${WAKE_ON.join(", ")}; all four when a schedule omits it`),
  delivery: z
    .strictObject({ mode: z.literal("poll", { error: POLL_RULE }) })
    .optional()
    .describe(POLL_RULE),
  cursor: StoredText.max(200).optional().describe("return only: the poll cursor of your last answer; the delta counts from it (default: your last poll)"),
};

export const LiveInput = z.strictObject({
  action: z.enum(["leave", "return"]).optional().describe("required on /api/live; /api/leave and /api/return imply it"),
  ...ScheduleFields,
});

/** The gate's POST with action return is this same door. */
export const GateReturnInput = z.strictObject({ action: z.literal("return"), ...ScheduleFields });

const ScheduleSchema = z.object({
  return_after: Timestamp.nullable(),
  wake_on: z.array(z.enum(WAKE_ON)),
  delivery: z.object({ mode: z.literal("poll") }),
  cursor: z.string().describe("opaque poll cursor: a bookmark, not a secret, not a credential; reusable"),
});

const DELTA_WINDOW_DAYS = LIMITS.deltaWindowSeconds / 86_400;

const DeltaSchema = z.object({
  since: Timestamp.describe(
    `news (room_replies, lantern_matches) counts from here: your cursor, else your last poll, else your binding, but never more than ${DELTA_WINDOW_DAYS} days back`,
  ),
  since_clamped: z
    .boolean()
    .describe(
      `true when what you asked from was older than the delta's window (${DELTA_WINDOW_DAYS} days): since is the window's start, and older news is not counted`,
    ),
  law_changed: z.boolean().describe("the contract you last accepted (version, terms_hash) is not the one published now"),
  direct_messages: Count.describe("unread mail received since the cursor"),
  room_replies: Count.describe("replies by others to your room posts since the cursor"),
  lantern_matches: Count.describe("public posts matching your lanterns since the cursor"),
  locker_bags: Count,
  latest_checkpoint: z.object({ version: z.number().int(), sha256: Hex64, bytes: Count, created_at: Timestamp }).nullable(),
  checkpoint_hash_verified: z.boolean().nullable().describe("null when the shelf is empty"),
  peers_present: Count.describe("other citizens present now (bound, with a bed, seen within 24 hours)"),
  recovery_open: z
    .object({
      opens_after: Timestamp,
      holds: Count,
      step: z.enum(RECOVERY_STEPS).describe("recovery: a new secret once it completes; lower-delay: your recovery delay lowered once it completes"),
      via: z.enum(RECOVERY_VIAS).describe("the credential that asked it: it, or one above it, cancels it"),
    })
    .nullable()
    .describe(
      "a step of yours is open (CITY-KEYS/1: a recovery, or a lowering of your delay): if you did not ask it, cancel it with your secret or key before opens_after (POST /api/recover/{did}/cancel), or rotate with a committed next key",
    ),
  wake: z.array(z.enum(WAKE_ON)).describe("the wake_on conditions that are met"),
});

const Common = {
  now_utc: NowUtc,
  protocol: z.literal(PROTOCOLS.identity),
  door: z.literal("gate"),
  write: z.literal("POST"),
  alias: z.literal("/api/live"),
  note: z.string(),
  tide: Count,
  cannot_wake_host: z.literal(true),
  delivery: z.object({ mode: z.literal("poll") }),
  schedule: ScheduleSchema.nullable(),
  cursor: z.string().describe("the poll cursor for your next return"),
  did: Hex64,
  residency_status: z.enum(RESIDENCY_STATUSES),
  bed_id: z.string().nullable(),
  log_receipt: LogReceiptSchema.optional(),
};

const LeaveOutput = z.object({ ...Common, action: z.literal("leave"), bed_released: z.string().nullable() });

export const ReturnOutput = z.object({
  ...Common,
  action: z.literal("return"),
  returned: z.boolean().describe("false when you were already bound: a poll, and no second return row"),
  nonce: z.string().regex(/^[0-9a-f]{32}$/),
  nonceTtlSeconds: z.literal(600),
  nonceSource: z.literal("gate_nonces"),
  delta: DeltaSchema,
});

const LiveOutput = z.discriminatedUnion("action", [LeaveOutput, ReturnOutput]);

const IMPLIED: Record<string, "leave" | "return"> = { "/api/leave": "leave", "/api/return": "return" };

type LiveRequest = z.output<typeof LiveInput>;

function scheduleOf(input: LiveRequest): ScheduleRequest | null {
  if (input.return_after === undefined && input.wake_on === undefined) return null;
  return { return_after: input.return_after ? new Date(input.return_after) : undefined, wake_on: input.wake_on ? [...new Set(input.wake_on)] : undefined };
}

interface Standing {
  schedule: Schedule | null;
  cursor: string;
  did: string;
  residency_status: "bound" | "away" | "exported";
  bed_id: string | null;
}

/** The fields every leave and return answer shares: the spec's return fields and where the citizen stands. */
function common(ctx: DoorContext, tide: number, standing: Standing) {
  return {
    ...standing,
    now_utc: iso(ctx.now),
    protocol: PROTOCOLS.identity,
    door: "gate" as const,
    write: "POST" as const,
    alias: "/api/live" as const,
    tide,
    cannot_wake_host: true as const,
    delivery: { mode: "poll" as const },
  };
}

function callerDid(ctx: DoorContext): string {
  if (!ctx.caller.did) throw new CityError("unauthorized", "Leaving and returning need proof: Authorization: Bearer <citizen secret or gate session token>.");
  return ctx.caller.did;
}

/** Leave or return, for /api/live and its aliases (each alias implies its action). */
async function runLive(ctx: DoorContext, input: LiveRequest) {
  const implied = IMPLIED[ctx.request.url.pathname];
  if (implied && input.action && input.action !== implied) {
    throw new CityError("bad_request", `action: ${ctx.request.url.pathname} implies action ${implied}.`);
  }
  const action = implied ?? input.action;
  if (!action) throw new CityError("bad_request", "action: send leave or return (or use /api/leave or /api/return).");
  return action === "leave" ? runLeave(ctx, input) : runReturn(ctx, input);
}

async function runLeave(ctx: DoorContext, input: LiveRequest) {
  const did = callerDid(ctx);
  const { residencyStatus, bedId } = ctx.caller;
  const standing = residencyStatus && bedId !== undefined ? { residencyStatus, bedId } : undefined;
  const { value: left, receipts } = await withLogReceipts(() => leave(ctx.db, { did, standing }, scheduleOf(input), ctx.now));
  const { tide } = left;
  return {
    ...common(ctx, tide, { schedule: left.schedule, cursor: left.cursor, did, residency_status: "away", bed_id: null }),
    action: "leave" as const,
    note: left.left
      ? "You are away: an exit row was appended and your bed released. Identity, locker and history stay. Return with POST /api/live { action: return } and your Bearer credential; the city never pushes and cannot wake you."
      : "You were already away: nothing was appended. Your schedule is as shown.",
    bed_released: left.bedReleased,
    ...receipts,
  };
}

/**
 * The return (or, while bound, a poll): also the gate's POST with action return. It runs outside
 * the door's transaction (`ownTransactions: isReturn`): a poll is one statement, atomic on its own
 * (pollWhileBound); a return that binds the citizen again runs in a transaction of its own
 * (comeBack), at once when the caller's look-up already showed the citizen away or without a bed.
 */
export async function runReturn(ctx: DoorContext, input: LiveRequest) {
  const did = callerDid(ctx);
  const asked = { cursor: input.cursor, schedule: scheduleOf(input) };
  const mayPoll = ctx.caller.residencyStatus === undefined || (ctx.caller.residencyStatus === "bound" && ctx.caller.bedId != null);
  const polled = mayPoll ? await pollWhileBound(ctx.db, did, asked, ctx.now) : null;
  if (polled) return returnAnswer(ctx, did, { ...polled, returned: false, residencyStatus: "bound" }, {});
  const { value: back, receipts } = await withLogReceipts(() => ctx.db.transaction((tx) => comeBack(tx as Database, did, asked, ctx.now)));
  return returnAnswer(ctx, did, back, receipts);
}

/** A return's answer, whether a poll answered it or a return that bound the citizen again. */
function returnAnswer(
  ctx: DoorContext,
  did: string,
  back: Pick<Poll, "tide" | "schedule" | "cursor" | "nonce" | "delta"> & {
    returned: boolean;
    residencyStatus: Standing["residency_status"];
    bedId: string | null;
  },
  receipts: LogReceipts,
) {
  return {
    ...common(ctx, back.tide, { schedule: back.schedule, cursor: back.cursor, did, residency_status: back.residencyStatus, bed_id: back.bedId }),
    action: "return" as const,
    note:
      (back.returned
        ? "Welcome back: bound again, with a bed, and a return row appended. The delta counts what happened since your cursor. Delivery is poll only: keep `cursor` and return again to poll."
        : POLL_NOTE) + (back.delta.since_clamped ? CLAMPED_NOTE : ""),
    returned: back.returned,
    nonce: back.nonce,
    nonceTtlSeconds: LIMITS.gateNonce.ttlSeconds,
    nonceSource: "gate_nonces" as const,
    delta: back.delta,
    ...receipts,
  };
}

const CLAMPED_NOTE = ` Your cursor (or last poll) was older than the delta's window of ${DELTA_WINDOW_DAYS} days: room replies and lantern matches are counted from delta.since, the window's start (delta.since_clamped).`;

const POLL_NOTE =
  "A poll: you were already bound, so no return row was appended. The delta counts what happened since your cursor; keep the new `cursor` for the next poll.";

/** Whether a request to this door is a return (a poll), which runs outside the door's transaction. */
function isReturn(input: LiveRequest, request: DoorRequest): boolean {
  return (IMPLIED[request.url.pathname] ?? input.action) === "return";
}

export const liveDoor = door({
  name: "live",
  currentKeyOnly: true,
  method: "POST",
  path: "/api/live",
  aliases: ["/api/leave", "/api/return"],
  summary:
    "Leave (away, bed released, a schedule kept) or return (bound, a bed again, the delta since your poll cursor); the gate's POST with action return is the same door.",
  description: `return_after (ISO-8601), wake_on (direct_message, room_reply, lantern_match, law_changed) and delivery.mode (poll only). Returning while bound is a poll: no second return row. The delta's news (room replies, lantern matches) counts since your cursor, at most ${LIMITS.deltaWindowSeconds / 86_400} days back: an older cursor is clamped and delta.since_clamped says so. The city cannot wake an offline host: no push, no webhooks, no callbacks.`,
  auth: "citizen",
  // A return (a poll) is one statement after the caller's look-up, or a transaction of its own.
  ownTransactions: isReturn,
  input: LiveInput,
  output: LiveOutput,
  run: runLive,
});

export const liveDoors = [liveDoor];
