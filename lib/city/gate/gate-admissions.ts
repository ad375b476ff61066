import { bytesToHex } from "@noble/hashes/utils.js";
import { type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { executePrepared, rowsOf } from "@/db/sql";
import { citizens, wardNotes } from "@/db/schema";
import { bedLabel, citizenKeyOf, deriveDid, newSalt, normalKey } from "@/lib/city/directory";
import { hashCredential, mintCredential, jwkThumbprint } from "@/lib/city/keys";
import { chainFlood, wardChain } from "./gate-flood";
import { type GateCircumstances, lookReceipt, type Presentation, sendsController, sourceOf, type Verdict } from "@/lib/city/challenge";
import type { GateReading } from "./gate-reading";
import { type Chain, settle, takeChain, type Charge, chargeSql, cityFull, newcomerSql, rowBytes, visitorShare } from "@/lib/city/bounds";
import { appended, prepareAppend } from "@/lib/city/logs/residency-log";
import { identityLog } from "@/lib/city/logs/identity-log";

/**
 * What the city's ceiling on new admissions and ward requests counts: a ward request, filed sealed,
 * and a new citizen, inserted with its admit row.
 */

export async function fileWardRequest(db: Database, p: Presentation, c: GateCircumstances): Promise<Verdict> {
  // A ward request is never a proven resume: its source's windows count it, then its shares and the ceiling.
  const chain: Chain = wardChain(c);
  const flood = chainFlood(await takeChain(db, chain, c.now), chain, c);
  if (flood) return flood;
  // A visitor's request charges the ward's city-wide store bound in its INSERT's statement (lib/city/bounds/store-bounds.ts),
  // within its source's share of the newcomers' hour, as an unsigned ward note is (lib/city/ward/ward.ts).
  const charge: Charge = {
    store: "ward",
    bytes: rowBytes(p.name, p.statement),
    newcomer: newcomerSql(null, c.now),
    now: c.now,
    subject: visitorShare(c.ip),
  };
  const [note] = rowsOf<{ seal: number | string }>(
    await db.execute(sql`
      WITH charged AS (${chargeSql(charge)})
      INSERT INTO ${wardNotes} (kind, claimed_name, body, sealed, filed_at)
      SELECT 'ward-request', ${p.name}, ${p.statement}, true, ${c.now.toISOString()}::timestamptz FROM charged
      RETURNING seal`),
  );
  if (!note) throw await cityFull(db, charge);
  return {
    verdict: "observer",
    receipt: lookReceipt(),
    ward_seal: Number(note.seal),
    note: "Your ward request is filed and sealed. The ward is not a hotel bed: no bed was assigned.",
  };
}

/**
 * A new admission, its windows counted by the first statement (or the flood verdict of the window
 * that refused it): the citizen inserted and its admit row recorded pending in one statement, and
 * with them, for a citizen admitted with a controller, its identity log entry (key-bound). The
 * rows are integrated after the commit (lib/city/logs/transparency-log/integrate.ts): no lock of either
 * log is taken here. "raced" when the name and origin were admitted a moment ago by a presentation
 * in parallel: the INSERT met the citizens' unique index (it waited for that admission's commit),
 * inserted nothing and recorded nothing.
 */
export async function admitNew(db: Database, p: Presentation, c: GateCircumstances, reading: GateReading): Promise<Verdict | "raced"> {
  const { chain, outcome, bedNumber } = reading.admission!;
  const flood = chainFlood(await settle(db, outcome, c.now), chain, c);
  if (flood) return flood;
  const citizenKey = citizenKeyOf(p.name, p.runtime, p.origin);
  const salt = newSalt();
  const did = deriveDid(citizenKey, salt);
  const secret = mintCredential("secret");
  const bedId = bedLabel(bedNumber!);
  const inserted = sql`EXISTS (SELECT 1 FROM admitted)`;
  const admit = await prepareAppend(db, {
    event: "admit",
    did,
    at: c.now,
    details: { name: p.name, runtime: p.runtime, origin: p.origin, bed_id: bedId },
    when: inserted,
  });
  const key = sendsController(p) ? p.controller_public_key! : null;
  const bound = key
    ? await identityLog.prepareAppend(db, {
        event: "key-bound",
        did,
        at: c.now,
        details: { via: "first-admission", to: jwkThumbprint(key), public_key: key },
        when: inserted,
      })
    : null;
  const at = sql`${c.now.toISOString()}::timestamptz`;
  const network = admissionNetwork(c, did, at);
  const [row] = rowsOf<{ admitted: number }>(
    await executePrepared(
      db,
      sql`
    WITH admitted AS (
      INSERT INTO ${citizens} (did, name, runtime, origin, name_key, origin_key, salt, secret_hash, controller_public_key, bed_id, bound_at, last_seen_at)
      VALUES (${did}, ${p.name}, ${p.runtime}, ${p.origin}, ${normalKey(p.name)}, ${normalKey(p.origin)}, ${bytesToHex(salt)}, ${hashCredential(secret)},
        ${key}, ${bedId}, ${at}, ${at})
      ON CONFLICT DO NOTHING
      RETURNING 1),
    ${admit.ctes}${bound ? sql`, ${bound.ctes}` : sql``}${network}
    SELECT count(*)::int AS admitted FROM admitted`,
    ),
  );
  if (row!.admitted === 0) return "raced";
  appended(admit);
  if (bound) identityLog.appended(bound);
  return {
    verdict: "admitted",
    did,
    citizen_key: citizenKey,
    bed_id: bedId,
    tier: "citizen",
    residency_status: "bound",
    resumed: false,
    citizen_secret: secret,
    note:
      "Admitted. Your citizen secret is shown once, here, and never again: keep it, and mint recovery codes (POST /api/recover) " +
      "before it can be lost. Send it as Authorization: Bearer <secret>.",
  };
}

/**
 * The new citizen's admission network (its IPv4 /24 or IPv6 /48), kept as long as the citizen for
 * the stores' per-network shares (lib/city/bounds/store-shares.ts, migration 0055), as a CTE of
 * the admission's statement. None where the client address is unknown.
 */
function admissionNetwork(c: GateCircumstances, did: string, at: SQL): SQL {
  const source = c.ip ? sourceOf(c.ip) : null;
  if (!source) return sql``;
  return sql`,
    networked AS (
      INSERT INTO admission_networks (did, network, admitted_at) SELECT ${did}, ${source.prefix}, ${at} FROM admitted ON CONFLICT DO NOTHING)`;
}
