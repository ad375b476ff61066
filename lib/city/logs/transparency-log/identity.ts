import { is, sql } from "drizzle-orm";
import { PgTransaction } from "drizzle-orm/pg-core";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { CityError } from "@/lib/errors";
import { logLine } from "@/lib/logger";
import { b64, hasValidSignature, keyIdOf, NOTE_SIGNATURE, parseCheckpointBody, parseNote, parseVkey } from "@/lib/tlog/note";
import type { LogDescriptor } from "./descriptor";
import { logSigner, type LogSigner } from "./signer";

/**
 * A log's identity: the origin its checkpoints name and the key that signs
 * them are properties of the database, kept with the tree (table log_identity, identity_log_identity:
 * one append-only row each), not of each instance's configuration. The first instance whose configured origin and key
 * verify the tree as it stands records them; an instance whose configuration disagrees refuses to
 * append (log_identity_mismatch, 503), says so at start (instrumentation.ts), and its card still
 * publishes the database's identity, so every checkpoint served verifies against the card.
 */
export interface LogIdentity {
  origin: string;
  /** The C2SP key name (the origin, for the city's own key). */
  keyName: string;
  /** The Ed25519 public key, base64. */
  publicKey: string;
  /** The C2SP key id (SHA-256(name || "\n" || 0x01 || key)[:4]), hex. */
  keyId: string;
  vkey: string;
  recordedAt: Date;
}

export type IdentityCheck =
  | { agrees: true; identity: LogIdentity; configured: LogIdentity; signer: LogSigner; recordedNow: boolean }
  | { agrees: false; identity: LogIdentity | null; configured: LogIdentity; reason: string };

/** The identity an instance's configuration gives (CITY_LOG_ORIGIN, CITY_IDENTITY_LOG_ORIGIN or CITY_BASE_URL's host; CITY_SIGNING_KEY or the kept key). */
export function identityOfSigner(signer: LogSigner, recordedAt = new Date(0)): LogIdentity {
  return {
    origin: signer.origin,
    keyName: signer.origin,
    publicKey: b64(signer.publicKey),
    keyId: Buffer.from(keyIdOf(signer.origin, NOTE_SIGNATURE, signer.publicKey)).toString("hex"),
    vkey: signer.vkey,
    recordedAt,
  };
}

/** Does this signed checkpoint name the identity's origin and carry a valid signature by its key? Never throws. */
export function noteVerifies(note: string, identity: Pick<LogIdentity, "origin" | "vkey">): boolean {
  try {
    const parsed = parseNote(note);
    return parseCheckpointBody(parsed.body).origin === identity.origin && hasValidSignature(parsed, parseVkey(identity.vkey));
  } catch {
    return false;
  }
}

const same = (a: LogIdentity, b: LogIdentity) => a.origin === b.origin && a.keyName === b.keyName && a.publicKey === b.publicKey && a.vkey === b.vkey;

type IdentityRow = { origin: string; key_name: string; public_key: string; key_id: string; vkey: string; recorded_at: Date | string };
const fromRow = (row: IdentityRow): LogIdentity => ({
  origin: row.origin,
  keyName: row.key_name,
  publicKey: row.public_key,
  keyId: row.key_id,
  vkey: row.vkey,
  recordedAt: new Date(row.recorded_at),
});

/** What this instance learnt of each log's recorded identity, by the log's name. */
const cache = globalThis as unknown as { __cityLogIdentities?: Map<string, { vkey: string; check: IdentityCheck }> };
const learnt = () => (cache.__cityLogIdentities ??= new Map());

/** Forgets what this instance learnt of the database's identities, of both logs (tests that switch databases or keys). */
export function forgetLogIdentity(): void {
  learnt().clear();
  verified().clear();
}

function mismatch(identity: LogIdentity, configured: LogIdentity): string {
  const what = [
    identity.origin !== configured.origin ? `origin ${configured.origin} (the log's is ${identity.origin})` : null,
    identity.publicKey !== configured.publicKey ? `key ${configured.keyId} (the log's is ${identity.keyId})` : null,
  ]
    .filter(Boolean)
    .join(" and ");
  return `this instance is configured with ${what}`;
}

/**
 * Reads the database's log identity and compares it with this instance's configuration; records
 * the configured one when the database has none and the tree as it stands verifies under it (an
 * empty tree, or a latest checkpoint signed by this origin and key): one statement, and on a new
 * city the insert (ON CONFLICT DO NOTHING: the first instance wins) and, when another won, a read.
 * Kept per instance once read outside a transaction (the row never changes); a row recorded or read
 * inside one may yet roll back with it, so it is not kept there.
 */
export async function checkLogIdentity(log: LogDescriptor, db: Database, now = new Date(), options: { record?: boolean } = {}): Promise<IdentityCheck> {
  const signer = await logSigner(log, db);
  const held = learnt().get(log.name);
  const { identity: logIdentity, checkpoints } = log.tables;
  if (held && held.vkey === signer.vkey) return held.check;
  const configured = identityOfSigner(signer, now);
  const [row] = rowsOf<Partial<IdentityRow> & { latest_note: string | null }>(
    await db.execute(sql`SELECT i.origin, i.key_name, i.public_key, i.key_id, i.vkey, i.recorded_at,
      (SELECT note FROM ${checkpoints} ORDER BY size DESC LIMIT 1) AS latest_note
      FROM (SELECT 1) one LEFT JOIN ${logIdentity} i ON i.id = 1`),
  );
  let check: IdentityCheck;
  let recordedNow = false;
  if (row?.origin) {
    check = judge(fromRow(row as IdentityRow), configured, signer, false);
  } else if (row?.latest_note && !noteVerifies(row.latest_note, configured)) {
    check = {
      agrees: false,
      identity: null,
      configured,
      reason:
        "the database records no log identity and the log's latest checkpoint is not signed by this instance's origin and key: run `npm run log-identity` to see whose it is",
    };
  } else if (options.record === false) {
    check = { agrees: false, identity: null, configured, reason: "the database records no log identity yet" };
  } else {
    const inserted = rowsOf<IdentityRow>(
      await db.execute(sql`INSERT INTO ${logIdentity} (id, origin, key_name, public_key, key_id, vkey, recorded_at)
        VALUES (1, ${configured.origin}, ${configured.keyName}, ${configured.publicKey}, ${configured.keyId}, ${configured.vkey}, ${now.toISOString()}::timestamptz)
        ON CONFLICT (id) DO NOTHING RETURNING origin, key_name, public_key, key_id, vkey, recorded_at`),
    );
    recordedNow = inserted.length > 0;
    const winner =
      inserted[0] ??
      rowsOf<IdentityRow>(await db.execute(sql`SELECT origin, key_name, public_key, key_id, vkey, recorded_at FROM ${logIdentity} WHERE id = 1`))[0];
    if (!winner) throw new Error("the log identity row could not be read back");
    check = judge(fromRow(winner), configured, signer, recordedNow);
  }
  // Kept only when read (or recorded) outside a transaction; "no identity" is never kept.
  if (check.identity && !is(db, PgTransaction)) learnt().set(log.name, { vkey: signer.vkey, check });
  return check;
}

function judge(identity: LogIdentity, configured: LogIdentity, signer: LogSigner, recordedNow: boolean): IdentityCheck {
  return same(identity, configured)
    ? { agrees: true, identity, configured, signer, recordedNow }
    : { agrees: false, identity, configured, reason: mismatch(identity, configured) };
}

/** The problem an instance whose configuration disagrees with the log answers instead of appending or signing. */
export function identityRefusal(log: LogDescriptor, check: Extract<IdentityCheck, { agrees: false }>): CityError {
  return new CityError(
    "log_identity_mismatch",
    `This instance cannot sign the ${log.name}: ${check.reason}. Nothing was changed. Another instance of the city may answer; the operator aligns this one's configuration (npm run log-identity).`,
    { retryAfterSeconds: 60 },
  );
}

/** The signer for an append or a checkpoint: this instance's own, only when it is the log's recorded identity. */
export async function appendSigner(log: LogDescriptor, db: Database, now = new Date()): Promise<LogSigner> {
  const check = await checkLogIdentity(log, db, now);
  if (!check.agrees) throw identityRefusal(log, check);
  return check.signer;
}

/** The identity the card publishes: the database's, whatever this instance's configuration (its own only before any is recorded). */
export async function publishedLogIdentity(log: LogDescriptor, db: Database, now = new Date(), options: { record?: boolean } = {}): Promise<LogIdentity> {
  const check = await checkLogIdentity(log, db, now, options);
  return check.identity ?? check.configured;
}

/** The last note verified for each log, by the log's name. */
const notes = globalThis as unknown as { __cityVerifiedNotes?: Map<string, { vkey: string; note: string }> };
const verified = () => (notes.__cityVerifiedNotes ??= new Map());

/**
 * A checkpoint note as a door may serve it: only when it verifies against the published identity
 * (the card's `log`); the last one verified is remembered, so the latest checkpoint costs one
 * signature check per new size, not per request.
 */
export async function verifiedNote(log: LogDescriptor, db: Database, note: string, now = new Date(), options: { record?: boolean } = {}): Promise<boolean> {
  const identity = await publishedLogIdentity(log, db, now, options);
  const last = verified().get(log.name);
  if (last && last.vkey === identity.vkey && last.note === note) return true;
  if (!noteVerifies(note, identity)) return false;
  verified().set(log.name, { vkey: identity.vkey, note });
  return true;
}

/** What an instance says at start (instrumentation.ts): its agreement with the log's identity, loudly when it disagrees. */
export async function announceLogIdentity(log: LogDescriptor, db: Database): Promise<IdentityCheck> {
  const check = await checkLogIdentity(log, db);
  if (check.agrees) {
    logLine("info", "log identity", { origin: check.identity.origin, key_id: check.identity.keyId, recorded_now: check.recordedNow });
  } else {
    logLine("error", "LOG IDENTITY MISMATCH", {
      detail: `${check.reason}. This instance refuses every write that appends to the ${log.name} (503 log_identity_mismatch) and serves only checkpoints that verify against the log's identity. Align its configuration (${log.originVariable} or CITY_BASE_URL, CITY_SIGNING_KEY): npm run log-identity -- --adopt prints what to set.`,
      log_origin: check.identity?.origin ?? null,
      log_key_id: check.identity?.keyId ?? null,
      configured_origin: check.configured.origin,
      configured_key_id: check.configured.keyId,
    });
  }
  return check;
}

export interface IdentityReport {
  check: IdentityCheck;
  /** Checkpoints held, and how many of them do not verify under the recorded identity (or the configured one, when none is recorded). */
  checkpoints: number;
  foreignCheckpoints: number;
  /** The smallest size whose checkpoint does not verify, if any. */
  firstForeignSize: number | null;
}

/**
 * The operator's view (npm run log-identity): the recorded identity, this configuration's, and
 * every held checkpoint checked against the identity, a page at a time. `record` records the
 * configured identity when none is (only when the tree's latest checkpoint verifies under it).
 */
export async function logIdentityReport(log: LogDescriptor, db: Database, options: { record?: boolean } = {}): Promise<IdentityReport> {
  forgetLogIdentity();
  const check = await checkLogIdentity(log, db, new Date(), { record: options.record ?? false });
  const against = check.identity ?? check.configured;
  let checkpoints = 0;
  let foreignCheckpoints = 0;
  let firstForeignSize: number | null = null;
  for (let after = -1; ;) {
    const page = rowsOf<{ size: number | string; note: string }>(
      await db.execute(sql`SELECT size, note FROM ${log.tables.checkpoints} WHERE size > ${after} ORDER BY size LIMIT 1000`),
    );
    for (const row of page) {
      checkpoints += 1;
      if (!noteVerifies(row.note, against)) {
        foreignCheckpoints += 1;
        firstForeignSize ??= Number(row.size);
      }
    }
    if (page.length < 1000) break;
    after = Number(page[page.length - 1]!.size);
  }
  return { check, checkpoints, foreignCheckpoints, firstForeignSize };
}
