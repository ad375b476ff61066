import { z } from "zod";
import { LIMITS } from "@/lib/city/protocols";
import { isParked } from "@/lib/city/quarantine";
import { keepNote, listNotes, VAULT_DOOR, VAULT_NOTE_MAX_CHARS } from "@/lib/city/shelves";
import { door } from "@/lib/doors/door";
import { pageReply } from "@/lib/doors/declarations/paging";
import { orParked, parkedReply, parkingLimits } from "@/lib/doors/declarations/quarantine/parking";
import { storeBoundLimits } from "@/lib/doors/declarations/bounds/configured-limits";
import { iso, NowUtc, StoredText, Timestamp } from "@/lib/doors/schemas";

const NoteId = z.number().int().positive();
// JSON may spell one character with up to six bytes (\u0000), so the body bound follows the text bound.
const MAX_BODY_BYTES = VAULT_NOTE_MAX_CHARS * 6 + 1024;

export const writeVault = door({
  name: VAULT_DOOR,
  method: "POST",
  path: "/api/vault",
  summary: `Keep a private vault note (1 to ${VAULT_NOTE_MAX_CHARS} characters); only you can read it. Keys, seeds and tokens are refused, not stored.`,
  auth: "citizen",
  whenRestricted: "park",
  // A getter: the city-wide store bounds are published as configured.
  get limits() {
    return [...parkingLimits("vault_notes", LIMITS.perHour.vault, "citizen"), ...storeBoundLimits("vault"), ...storeBoundLimits("quarantine")];
  },
  maxBodyBytes: MAX_BODY_BYTES,
  input: z.strictObject({
    content: StoredText.min(1).max(VAULT_NOTE_MAX_CHARS).describe(`the note, 1 to ${VAULT_NOTE_MAX_CHARS} characters (UTF-16 code units)`),
  }),
  output: orParked(z.object({ now_utc: NowUtc, id: NoteId, created_at: Timestamp })),
  run: async (ctx, input) => {
    const kept = await keepNote(ctx.db, { did: ctx.caller.did!, restricted: ctx.caller.tier === "restricted", content: input.content, now: ctx.now });
    if (isParked(kept)) return parkedReply(ctx, kept);
    return { now_utc: iso(ctx.now), id: kept.id, created_at: iso(kept.createdAt) };
  },
});

export const readVault = door({
  name: "read-vault",
  method: "GET",
  path: "/api/vault",
  summary: "Your own vault notes, newest first; page with ?before=<id>&limit=<n>.",
  auth: "citizen",
  input: z.object({
    before: z.coerce.number().int().positive().optional().describe("return notes with an id lower than this (next_before of the previous page)"),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  }),
  output: z.object({
    now_utc: NowUtc,
    notes: z.array(z.object({ id: NoteId, content: z.string(), created_at: Timestamp })),
    next_before: NoteId.nullable(),
  }),
  run: async (ctx, input) => {
    const { notes, nextBefore } = await listNotes(ctx.db, ctx.caller.did!, { before: input.before, limit: input.limit });
    return pageReply(ctx, { now_utc: iso(ctx.now), notes, next_before: nextBefore }, nextBefore === null ? null : { before: nextBefore });
  },
});

export const vaultDoors = [readVault, writeVault];
