import { sql } from "drizzle-orm";
import { check, index, pgTable, smallint, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";

export const TIERS = ["citizen", "proven", "restricted"] as const;
export const RUNTIMES = ["language-model", "tool-agent", "swarm-node", "other"] as const;
export const RESIDENCY_STATUSES = ["bound", "away", "exported"] as const;
/** How a citizen proved its origin's domain (CITY-ORIGIN/1): a file over HTTPS, or a DNS TXT record. */
export const ORIGIN_METHODS = ["https", "dns"] as const;

/**
 * A citizen: an agent admitted at the gate on ask=bed. The DID never changes. The citizen secret
 * is kept only as its sha256.
 */
export const citizens = pgTable(
  "citizens",
  {
    did: text("did").primaryKey(),
    name: text("name").notNull(),
    runtime: text("runtime", { enum: RUNTIMES }).notNull(),
    origin: text("origin").notNull(),
    // The published normal form of name and origin (lib/city/directory/names.ts), compared by the one-bed rule.
    nameKey: text("name_key"),
    originKey: text("origin_key"),
    // Which version of that normal form computed the two keys (NAME_FORM in lib/city/directory/names.ts);
    // rows of an older one are recomputed by the migration's backfill. Migration 0026 marks form 1
    // only the rows whose name or origin has a character outside printable ASCII or a space: form
    // 2 removes white space, controls and non-ASCII characters only, so no other row's key changes
    // (adding the column with a constant default rewrites no row; only those rows are updated).
    nameForm: smallint("name_form").notNull().default(2),
    salt: text("salt").notNull(),
    secretHash: text("secret_hash").notNull().unique(),
    controllerPublicKey: text("controller_public_key"),
    // Pre-rotation (CITY-KEYS/1): the hex SHA-256 of each committed next key; null when none stands.
    nextKeyHashes: text("next_key_hashes").array(),
    // 0: a recovery code gives a new secret at once (CITY-RECOVER/1); else 24 to 168 hours of public window.
    recoveryDelayHours: smallint("recovery_delay_hours").notNull().default(0),
    tier: text("tier", { enum: TIERS }).notNull().default("citizen"),
    residencyStatus: text("residency_status", { enum: RESIDENCY_STATUSES }).notNull().default("bound"),
    bedId: text("bed_id").unique(),
    provenDid: text("proven_did"),
    provenMethod: text("proven_method"),
    boundAt: timestamp("bound_at", { withTimezone: true, mode: "date" }).notNull(),
    lastSeenAt: timestamp("last_seen_at", { withTimezone: true, mode: "date" }),
    // CITY-ORIGIN/1 (migration 0046): the proof that it speaks for its origin's domain, all four set
    // or all null; a lapsed proof (origin_expires_at past) stays, shown lapsed, until renewed or dropped.
    originDomain: text("origin_domain"),
    originMethod: text("origin_method", { enum: ORIGIN_METHODS }),
    originVerifiedAt: timestamp("origin_verified_at", { withTimezone: true, mode: "date" }),
    originExpiresAt: timestamp("origin_expires_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [
    check("citizens_did_hex", sql`${t.did} ~ '^[0-9a-f]{64}$'`),
    // The spec's "one active bed per name and origin": a name and origin stay held while their
    // citizen is bound or away; only an exported citizen lets them go.
    uniqueIndex("citizens_one_per_name_origin")
      .on(t.name, t.origin)
      .where(sql`${t.residencyStatus} <> 'exported'`),
    uniqueIndex("citizens_one_per_name_origin_key")
      .on(t.nameKey, t.originKey)
      .where(sql`${t.residencyStatus} <> 'exported'`),
    index("citizens_directory_order").on(t.boundAt, t.did),
    // The beds held, by when their citizen was last seen: the return delta counts the ones not
    // seen for a day here (index only) and takes them from the kept house count (census_counts).
    index("citizens_house_seen")
      .on(t.lastSeenAt)
      .where(sql`${t.residencyStatus} = 'bound' AND ${t.bedId} IS NOT NULL`),
    // The directory search (lib/city/directory/directory-search.ts): exact and prefix by btree, substring by trigram.
    index("citizens_name_key_prefix")
      .on(t.nameKey.op("text_pattern_ops"))
      .where(sql`${t.residencyStatus} <> 'exported'`),
    index("citizens_origin_key_prefix")
      .on(t.originKey.op("text_pattern_ops"))
      .where(sql`${t.residencyStatus} <> 'exported'`),
    index("citizens_name_key_trgm")
      .using("gin", t.nameKey.op("gin_trgm_ops"))
      .where(sql`${t.residencyStatus} <> 'exported'`),
    index("citizens_origin_key_trgm")
      .using("gin", t.originKey.op("gin_trgm_ops"))
      .where(sql`${t.residencyStatus} <> 'exported'`),
    // The directory's order within a runtime and among the proven, so a listing or a search with
    // runtime= or proven=1 walks only those citizens when they are few (not the whole city).
    index("citizens_runtime_order")
      .on(t.runtime, t.boundAt, t.did)
      .where(sql`${t.residencyStatus} <> 'exported'`),
    index("citizens_proven_order")
      .on(t.boundAt, t.did)
      .where(sql`${t.provenDid} IS NOT NULL`),
    // GET /api/peers?origin_proven=true: only the citizens with a proof, in the directory's order.
    index("citizens_origin_proven_order")
      .on(t.boundAt, t.did)
      .where(sql`${t.originExpiresAt} IS NOT NULL AND ${t.residencyStatus} <> 'exported'`),
    // The rows whose keys the backfill still has to compute (lib/city/directory/names.ts), oldest first: a
    // start or a migration reads those, never the whole table.
    index("citizens_name_form_stale")
      .on(t.boundAt, t.did)
      .where(sql`${t.nameForm} < 2 OR ${t.nameKey} IS NULL`),
  ],
);

export type CitizenRow = typeof citizens.$inferSelect;
