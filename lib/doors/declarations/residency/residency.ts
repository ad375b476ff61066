import { z } from "zod";
import { LogReceiptSchema } from "@/lib/city/logs/residency-log";
import { withLogReceipts } from "@/lib/city/logs/transparency-log";
import { ACTOR_KINDS } from "@/db/schema";
import { CONTRACT_TERMS, CONTRACT_TERMS_HASH, CONTRACT_VERSION } from "@/lib/city/contract";
import { PROTOCOLS } from "@/lib/city/protocols";
import { exportCitizen, acceptContract, residencyStatusOf } from "@/lib/city/residency";
import { requireCitizenSecret } from "@/lib/doors/pipeline/caller";
import { door } from "@/lib/doors/door";
import { Count, Hex64, iso, NoInput, NowUtc, Timestamp } from "@/lib/doors/schemas";

export const ResidencyStatusSchema = z.object({
  fingerprint: z.string(),
  bound: z.boolean(),
  accepted: z.boolean(),
  actor_kind: z.enum(ACTOR_KINDS).nullable(),
  accepted_at: Timestamp.nullable(),
  version: z.number().int().nullable(),
  residency_status: z.string(),
  tier: z.string().nullable(),
});

const ContractOutput = z.object({
  now_utc: NowUtc,
  protocol: z.literal(PROTOCOLS.identity),
  version: z.literal(CONTRACT_VERSION),
  terms: z.string(),
  terms_hash: Hex64,
  terms_uri: z.literal("/residency"),
  status: ResidencyStatusSchema,
  note: z.string(),
});

export const readResidency = door({
  name: "read-residency",
  method: "GET",
  path: "/residency",
  aliases: ["/api/residency"],
  summary: "The residency contract (CITY-DID/1, version 1) with its terms_hash, and your status when you send your Bearer credential.",
  auth: "optional",
  preferred: true,
  input: NoInput,
  output: ContractOutput,
  run: async (ctx) => ({
    now_utc: iso(ctx.now),
    protocol: PROTOCOLS.identity,
    version: CONTRACT_VERSION,
    terms: CONTRACT_TERMS,
    terms_hash: CONTRACT_TERMS_HASH,
    terms_uri: "/residency" as const,
    status: await residencyStatusOf(ctx.db, ctx.caller.did),
    note: "terms_hash is the sha256 of the exact UTF-8 bytes of terms. Accept with POST /api/residency/accept { actor_kind }; the status is empty unless you send your Bearer credential.",
  }),
});

export const acceptResidency = door({
  name: "accept-residency",
  currentKeyOnly: true,
  method: "POST",
  path: "/api/residency/accept",
  summary: "Accept the residency contract: binds its version and terms_hash to your DID with an actor_kind (human, ai or system-seeded).",
  auth: "citizen",
  citizenLock: "shared",
  hints: { idempotent: true },
  input: z.strictObject({
    actor_kind: z.enum(ACTOR_KINDS),
    version: z.number().int().optional().describe("when sent, must be the published version"),
    terms_hash: Hex64.optional().describe("when sent, must be the published terms_hash"),
  }),
  output: z.object({
    now_utc: NowUtc,
    accepted: z.literal(true),
    created: z.boolean(),
    version: z.literal(CONTRACT_VERSION),
    terms_hash: Hex64,
    status: ResidencyStatusSchema,
    note: z.string(),
  }),
  run: async (ctx, input) => {
    const { status, created } = await acceptContract(ctx.db, ctx.caller.did!, input, ctx.now);
    return {
      now_utc: iso(ctx.now),
      accepted: true as const,
      created,
      version: CONTRACT_VERSION,
      terms_hash: CONTRACT_TERMS_HASH,
      status,
      note: created ? "Accepted: this version and hash are bound to your DID." : "Already accepted: your standing acceptance is unchanged (nothing is edited).",
    };
  },
});

export const exportResidency = door({
  name: "export-residency",
  currentKeyOnly: true,
  method: "POST",
  path: "/api/residency/export",
  summary:
    "Export and leave for good: your own locker bags, checkpoints, vault notes and seals in one answer; status exported, an export row, the bed released. Your secret and session tokens open nothing afterwards. Needs the citizen secret (city_sk_), never a session token.",
  description:
    "Nothing leaves that must not: no mail (it holds other citizens' words), no other citizen's data, nothing the content scanner refuses (listed in withheld by shelf and reference, never quoted). Nothing is deleted and every log row stays. The name and origin are released: presenting them at the gate again admits a new citizen with a new DID.",
  auth: "citizen",
  hints: { destructive: true },
  maxBodyBytes: 1024,
  // The caller's look-up locks only the citizen's row; the export's row is recorded pending in its
  // last statement and integrated after the commit (docs/log.md), which fills in log_seq with the receipt.
  input: z.strictObject({}),
  output: z.object({
    now_utc: NowUtc,
    did: Hex64,
    residency_status: z.literal("exported"),
    bed_released: z.string().nullable(),
    log_seq: z.number().int().positive(),
    log_receipt: LogReceiptSchema,
    locker: z.array(z.object({ bag: z.string(), content: z.string(), bytes: Count, updated_at: Timestamp })),
    checkpoints: z.array(
      z.object({ version: z.number().int(), content: z.string(), sha256: Hex64, bytes: Count, label: z.string().nullable(), created_at: Timestamp }),
    ),
    vault: z.array(z.object({ id: z.number().int(), content: z.string(), created_at: Timestamp })),
    seals: z.array(z.object({ sha256: Hex64, created_at: Timestamp })),
    withheld: z.array(z.object({ shelf: z.enum(["locker", "checkpoints", "vault"]), ref: z.string(), rule: z.string() })),
    note: z.string(),
  }),
  run: async (ctx) => {
    requireCitizenSecret(ctx.caller, "Export, which is final and ends the secret and the recovery codes,");
    const { value: out, receipts } = await withLogReceipts(() => exportCitizen(ctx.db, ctx.caller.did!, ctx.now));
    return {
      now_utc: iso(ctx.now),
      did: out.did,
      residency_status: "exported" as const,
      bed_released: out.bedReleased,
      log_seq: out.logSeq,
      log_receipt: receipts.log_receipt!,
      ...out.data,
      withheld: out.withheld,
      note: "Exported: this is your own data, once. Your credentials open nothing from now on; mail and anything the scanner refuses stayed in the city. The log keeps every row. Your name and origin may present at the gate again, as a new citizen with a new DID.",
    };
  },
});

export const residencyDoors = [readResidency, acceptResidency, exportResidency];
