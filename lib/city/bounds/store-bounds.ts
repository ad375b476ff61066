import { type SQL, sql } from "drizzle-orm";
import { type Database } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { type Env, env } from "@/lib/env";
import { CityError } from "@/lib/errors";
import { randomInt } from "node:crypto";
import {
  CITY_STORES,
  STORE_NAMES,
  STORE_ROW_BYTES,
  STORE_STANDING_DAYS,
  STORE_STRIPES,
  STORES_WITHOUT_NETWORK_SHARE,
  type StoreName,
  storeBytesVariable,
  storePerHourVariable,
} from "@/lib/store-limits";
import { newcomerAt, NEWCOMER_SECONDS, settledAt } from "./newcomers";
import {
  NETWORK_SUBJECT_PREFIX,
  networkHourShareSql,
  networkSubjectSql,
  type StoreShares,
  storeShares,
  subjectHourShare,
  subjectHourShareSql,
} from "./store-shares";

/*
 * City-wide store bounds. A citizen costs one anonymous POST, so every
 * per-citizen promise multiplies by the identities an attacker makes; every store that citizens
 * or visitors add to therefore has a city-wide bound on bytes in total and bytes added per clock
 * hour, and newcomers (lib/city/bounds/newcomers.ts) together may use only a share of each hour's bound.
 *
 * Each store's counters are split over STORE_STRIPES rows (city_store_stripes, migration 0044),
 * each with a fixed share of every bound (the shares sum exactly to the bound). One call of
 * city_store_charge (a function of that migration) folded into the write's own statement, gated
 * on everything the write already checks (the caller is proven, the per-citizen windows and limits
 * pass), charges ONE stripe: the first, from a random one on, that has room for the write and that
 * no other transaction holds (FOR UPDATE SKIP LOCKED), so writers of different citizens lock
 * different rows. When every stripe with room is held, it waits for one of them alone. When no
 * stripe alone has room for this write, it locks every stripe of the store in stripe order, checks
 * the sums against the bounds and spreads the bytes again so that every stripe has the same room. A stripe never passes its
 * share, so the store never passes its bound; and a write is refused only when the sums have no
 * room for it: no slack. Past a bound the write is refused 507 city_full; nobody is evicted and
 * nothing is deleted.
 *
 * Fair under flood (issue 43, migration 0051, lib/city/bounds/store-shares.ts): a charge with a subject (a
 * citizen, a visitor's source prefix) first takes its own row, bounded by its share of the hour and,
 * in append-only stores, by its own total; newcomers and visitors never reach the reserve (a fifth
 * of the total and of the hour at least).
 */

export type { StoreName } from "@/lib/store-limits";
export { STORE_NAMES, STORE_ROW_BYTES, STORE_STRIPES } from "@/lib/store-limits";

/** Every stored row's bytes: its client-chosen text (UTF-8) plus the row's own columns. */
export function rowBytes(...texts: (string | null | undefined)[]): number {
  return texts.reduce((sum: number, text) => sum + (text ? Buffer.byteLength(text, "utf8") : 0), STORE_ROW_BYTES);
}

/** A jsonb value's bytes as stored (pg_column_size), plus the row's own columns, as an SQL expression. */
export function jsonbRowBytes(json: string): SQL {
  return sql`(pg_column_size(${json}::jsonb) + ${STORE_ROW_BYTES}::int)`;
}

export interface StoreBound {
  store: StoreName;
  /** Bytes the store may hold in total. */
  total: number;
  /** Bytes the store may take per clock hour. */
  perHour: number;
  /** Of perHour, the bytes newcomers together may add. */
  newcomerPerHour: number;
  newcomerPercent: number;
  /** Of total, the bytes newcomers and visitors together may fill: the total less the reserve. */
  newcomerTotal: number;
}

/** A store's bounds as configured now (env CITY_STORE_<STORE>_BYTES, _BYTES_PER_HOUR, CITY_STORE_NEWCOMER_PERCENT). */
export function storeBound(store: StoreName, config: Env = env()): StoreBound {
  const part = CITY_STORES[store].env;
  const perHour = config[storePerHourVariable(part)];
  const percent = config.CITY_STORE_NEWCOMER_PERCENT;
  const total = config[storeBytesVariable(part)];
  const newcomerTotal = storeShares(store, config).newcomerTotal;
  return { store, total, perHour, newcomerPerHour: Math.floor((perHour * percent) / 100), newcomerPercent: percent, newcomerTotal };
}

/** The clock hour `now` falls in: the hourly bound's window. */
function hourOf(now: Date): Date {
  const hour = new Date(now);
  hour.setUTCMinutes(0, 0, 0);
  return hour;
}

/** Seconds until the next clock hour, when every hourly bound starts empty again. */
export function secondsToNextHour(now: Date): number {
  return Math.max(1, Math.ceil((hourOf(now).getTime() + 3_600_000 - now.getTime()) / 1000));
}

/** Whether the writer is a newcomer, in SQL: a citizen by its DID (the one definition), a visitor (null) always. */
export function newcomerSql(did: string | null, now: Date): SQL {
  if (did === null) return sql`true`;
  return sql`coalesce((SELECT ${newcomerAt(sql`c.bound_at`, sql`${now.toISOString()}::timestamptz`)} FROM citizens c WHERE c.did = ${did}), true)`;
}

export interface Charge {
  store: StoreName;
  /** The bytes the write adds (an SQL expression, or a number); a negative charge frees bytes and is never refused. */
  bytes: SQL | number;
  /** Whether the writer is a newcomer (newcomerSql). */
  newcomer: SQL;
  now: Date;
  /**
   * Who writes, for its share (lib/city/bounds/store-shares.ts): a citizen's subject with its DID, or a
   * visitor's source with none. Absent: the store's bounds alone.
   */
  subject?: { id: string; did: string | null };
  /**
   * false: charged to no network (a distress filing: another citizen of the writer's network must
   * not be able to refuse a call for help). The stores of STORES_WITHOUT_NETWORK_SHARE never are.
   */
  network?: false;
}

/** The writer's network subject for this charge, in SQL (null: none, or a charge made for no network). */
function chargeNetworkSql(charge: Charge): SQL {
  const charged = charge.network !== false && !STORES_WITHOUT_NETWORK_SHARE.includes(charge.store);
  return networkSubjectSql(charge.subject?.did ?? null, charged);
}

/**
 * The charge, as one SELECT for a CTE that the write's INSERT reads (`FROM charged`): it returns
 * one row when city_store_charge took the bytes (the total and the hour's bytes, and a newcomer's
 * the newcomers' share, stay within the bounds), none when they do not fit. `source` ("FROM x
 * WHERE ...") gates it on what the write already checked: no source row, no charge, no lock.
 */
export function chargeSql(charge: Charge, source: SQL = sql``, bound: StoreBound = storeBound(charge.store)): SQL {
  const bytes = typeof charge.bytes === "number" ? sql`${charge.bytes}::bigint` : sql`(${charge.bytes})::bigint`;
  // OFFSET 0 keeps the source a subquery of its own: the charge runs once per source row, after its conditions.
  if (!charge.subject) {
    return sql`
    SELECT ${charge.store}::text AS store FROM (SELECT ${bytes} AS b, (${charge.newcomer}) AS n ${source} OFFSET 0) AS x
    WHERE ${callCharge(charge.store, sql`x.b`, sql`x.n`, charge.now, bound)}`;
  }
  const shares = storeShares(charge.store);
  const share = subjectHourShareSql(shares, charge.subject.did, charge.now);
  return sql`
    SELECT ${charge.store}::text AS store FROM (SELECT ${bytes} AS b, (${charge.newcomer}) AS n, (${share}) AS s,
      ${chargeNetworkSql(charge)} AS net ${source} OFFSET 0) AS x
    WHERE ${callShareCharge(charge.store, charge.subject, sql`x.b`, sql`x.n`, sql`x.s`, sql`x.net`, charge.now, bound, shares)}`;
}

function callCharge(store: StoreName, bytes: SQL, newcomer: SQL, now: Date, bound: StoreBound): SQL {
  // The home stripe at random: parallel writers start their search at different rows.
  const home = randomInt(STORE_STRIPES);
  return sql`city_store_charge(${store}::text, ${bytes}, ${newcomer}, ${hourOf(now).toISOString()}::timestamptz, ${home}::int,
    ${bound.total}::bigint, ${bound.perHour}::bigint, ${bound.newcomerPerHour}::bigint, ${bound.newcomerTotal}::bigint)`;
}

/** A citizen's own total where it has one; none for a visitor source (a prefix's total would shut it out for good). */
function subjectTotalOf(subject: { did: string | null }, shares: StoreShares): number {
  return subject.did && shares.subjectTotal !== null ? shares.subjectTotal : Number.MAX_SAFE_INTEGER;
}

function callShareCharge(
  store: StoreName,
  subject: { id: string; did: string | null },
  bytes: SQL,
  newcomer: SQL,
  share: SQL,
  network: SQL,
  now: Date,
  bound: StoreBound,
  shares: StoreShares,
): SQL {
  const home = randomInt(STORE_STRIPES);
  // `network`: the citizen's admission network (migration 0055), bounded by its newcomers' part of
  // the hour for a newcomer, by the network's whole part otherwise.
  return sql`city_store_charge_share(${store}::text, ${subject.id}::text, ${network}, ${bytes}, ${newcomer}, ${hourOf(now).toISOString()}::timestamptz,
    ${home}::int, ${bound.total}::bigint, ${bound.perHour}::bigint, ${bound.newcomerPerHour}::bigint, ${bound.newcomerTotal}::bigint,
    ${share}, ${subjectTotalOf(subject, shares)}::bigint, ${networkHourShareSql(shares, newcomer)})`;
}

/**
 * Frees bytes of a store (rows removed: a lantern put out, a swept A2A task), as one SELECT of one
 * row for a CTE or a statement; a CTE of it runs only when read, so the caller reads it. The bytes
 * leave one stripe that holds them, or (none alone does) the store's stripes together, never below zero.
 */
export function releaseSql(store: StoreName, bytes: SQL): SQL {
  return sql`SELECT ${callCharge(store, sql`-greatest((${bytes})::bigint, 0)`, sql`false`, new Date(), storeBound(store))} AS released`;
}

/**
 * Charges a store in a statement of its own, for a write that cannot fold the charge into its own
 * statement; refused, it throws city_full (the caller's transaction rolls back with it).
 */
export async function chargeStore(db: Database, charge: Charge): Promise<void> {
  const bound = storeBound(charge.store);
  const charged = rowsOf(await db.execute(chargeSql(charge, sql``, bound)));
  if (charged.length === 0) throw await cityFull(db, charge, bound);
}

/**
 * The refusal of a charge that did not fit: it reads the store's row as committed now to say
 * which bound is reached and when to try again (Retry-After for the hour's bounds). Only refusals
 * pay this statement.
 */
export async function cityFull(db: Database, charge: Charge, bound: StoreBound = storeBound(charge.store)): Promise<CityError> {
  return (await fullFor(db, charge, bound, true))!;
}

/**
 * Whether a charge would be refused now, read without charging: the refusal it would meet, or
 * null while it fits. For a caller that must know before it does anything (the A2A bridge keeps a
 * task only after its door ran); the charge itself still decides.
 */
export async function refusalIfFull(db: Database, charge: Charge): Promise<CityError | null> {
  return fullFor(db, charge, storeBound(charge.store), false);
}

async function fullFor(db: Database, charge: Charge, bound: StoreBound, refused: boolean): Promise<CityError | null> {
  const bytes = typeof charge.bytes === "number" ? sql`${charge.bytes}::bigint` : sql`(${charge.bytes})::bigint`;
  const shares = storeShares(charge.store);
  const subject = charge.subject;
  // A subject's bytes in this clock hour (0 once its row's hour is over).
  const hourBytes = (id: SQL) =>
    sql`(SELECT CASE WHEN m.hour_start >= ${hourOf(charge.now).toISOString()}::timestamptz THEN m.hour_bytes ELSE 0 END
      FROM city_store_subjects m WHERE m.store = ${charge.store} AND m.subject = ${id})`;
  const network = chargeNetworkSql(charge);
  // The subject's own counts and share beside the store's sums (none without a subject).
  const mine = subject
    ? sql`(${subjectHourShareSql(shares, subject.did, charge.now)}) AS share,
        ${hourBytes(sql`${subject.id}`)} AS mine_hour,
        (SELECT m.total_bytes FROM city_store_subjects m WHERE m.store = ${charge.store} AND m.subject = ${subject.id}) AS mine_total,
        (SELECT c.bound_at FROM citizens c WHERE c.did = ${subject.did}) AS bound_at,
        ${hourBytes(network)} AS net_hour,
        ${network} AS net`
    : sql`NULL AS share, NULL AS mine_hour, NULL AS mine_total, NULL AS bound_at, NULL AS net_hour, NULL AS net`;
  type Row = {
    total: number;
    hour: number;
    newcomer: number;
    b: number;
    n: boolean;
    share: number | null;
    mineHour: number;
    mineTotal: number;
    /** A citizen writer's admission, when it settles (null: a visitor, who never does). */
    boundAt: Date | null;
    /** A citizen's admission network subject ("net:..."), null without one, and its bytes this hour. */
    net: string | null;
    netHour: number;
  };
  let row: Row | undefined;
  try {
    [row] = rowsOf<Record<string, string | boolean | null>>(
      await db.execute(sql`
        SELECT s.total AS total, s.hour AS hour, s.newcomer AS newcomer, ${bytes} AS b, (${charge.newcomer}) AS n, ${mine}
        FROM (${storeSumsSql(charge.now)}) s WHERE s.store = ${charge.store}`),
    ).map((r) => ({
      total: Number(r.total),
      hour: Number(r.hour),
      newcomer: Number(r.newcomer),
      b: Number(r.b),
      n: r.n === true,
      share: r.share === null ? null : Number(r.share),
      mineHour: Number(r.mine_hour ?? 0),
      mineTotal: Number(r.mine_total ?? 0),
      boundAt: r.bound_at === null || r.bound_at === undefined ? null : new Date(r.bound_at as string),
      net: typeof r.net === "string" ? r.net : null,
      netHour: Number(r.net_hour ?? 0),
    }));
  } catch {
    row = undefined;
  }
  const what = CITY_STORES[charge.store].what;
  const nothing = "Nothing was stored, nobody was evicted and nothing was deleted.";
  const retry = secondsToNextHour(charge.now);
  const ownTotal = subject?.did ? shares.subjectTotal : null;
  // The network's part of the hour this writer is bounded by (a newcomer's, or the whole network's).
  const networkHour = row?.n ? shares.newcomerNetworkPerHour : shares.networkPerHour;
  // Unreadable, the look-ahead stands aside: the charge itself decides.
  if (!refused && !row) return null;
  if (
    !refused &&
    row &&
    row.total + row.b <= bound.total &&
    row.hour + row.b <= bound.perHour &&
    (!row.n || (row.newcomer + row.b <= bound.newcomerPerHour && row.total + row.b <= bound.newcomerTotal)) &&
    (row.share === null || row.mineHour + row.b <= row.share) &&
    (row.net === null || row.netHour + row.b <= networkHour) &&
    (ownTotal === null || row.mineTotal + row.b <= ownTotal)
  )
    return null;
  if (row && row.total + row.b > bound.total) {
    return new CityError(
      "city_full",
      `The city is full: its ${charge.store} store (${what}) holds at most ${bound.total} bytes together and holds ${row.total}; this write needs ${row.b}. ${nothing} It takes more only when an operator raises CITY_STORE_${CITY_STORES[charge.store].env}_BYTES${charge.store === "lanterns" || charge.store === "a2a_tasks" ? " or stored rows are removed" : ""}.`,
      { limit: { name: `city_${charge.store}_bytes`, limit: bound.total, remaining: Math.max(0, bound.total - row.total) } },
    );
  }
  if (row && ownTotal !== null && row.mineTotal + row.b > ownTotal) {
    return new CityError(
      "limit_reached",
      `This citizen holds ${row.mineTotal} bytes in the ${charge.store} store (${what}), and each citizen may hold at most ${ownTotal} there (${shares.subjectTotal} of its ${bound.total}: CITY_STORE_SUBJECT_TOTAL_PERMILLE); this write needs ${row.b}. ${nothing} The store is not full: other citizens still write.`,
      { limit: { name: `city_${charge.store}_citizen_bytes`, limit: ownTotal, remaining: Math.max(0, ownTotal - row.mineTotal) } },
    );
  }
  if (row && row.n && row.total + row.b > bound.newcomerTotal) {
    // A newcomer citizen may write here once it settles: that is when to try again. A visitor never
    // settles (it may once admitted and settled), so its refusal names no time.
    const settles = row.boundAt ? Math.max(1, Math.ceil((settledAt(row.boundAt).getTime() - charge.now.getTime()) / 1000)) : null;
    return new CityError(
      "city_full",
      `The city is full for newcomers: citizens admitted less than ${NEWCOMER_SECONDS} s ago (and visitors) may fill its ${charge.store} store only up to ${bound.newcomerTotal} of its ${bound.total} bytes, and it holds ${row.total}; the rest (the reserve, ${bound.total - bound.newcomerTotal} bytes) is kept for settled citizens. ${nothing} ` +
        (settles !== null
          ? `This citizen may write here once it has lived ${NEWCOMER_SECONDS} s in the city: try again in ${settles} s.`
          : `A citizen may write here once it has lived ${NEWCOMER_SECONDS} s in the city; waiting frees nothing here for a visitor.`),
      {
        limit: { name: `city_${charge.store}_newcomer_bytes`, limit: bound.newcomerTotal, remaining: Math.max(0, bound.newcomerTotal - row.total) },
        ...(settles !== null ? { retryAfterSeconds: settles } : {}),
      },
    );
  }
  if (row && row.share !== null && row.mineHour + row.b > row.share) {
    const who = subject?.did ? "this citizen" : "this source (an IPv4 /24 or IPv6 /48, or every caller whose address the city cannot know)";
    return new CityError(
      "rate_limited",
      `One subject may add at most ${row.share} bytes per clock hour to the ${charge.store} store (its share of the store's hour, growing with a citizen's days in the city), and ${who} added ${row.mineHour}; this write needs ${row.b}. ${nothing} Try again in ${retry} s.`,
      {
        limit: {
          name: `city_${charge.store}_subject_bytes_per_hour`,
          limit: row.share,
          window_seconds: 3600,
          remaining: Math.max(0, row.share - row.mineHour),
        },
        retryAfterSeconds: retry,
      },
    );
  }
  if (row && row.net !== null && row.netHour + row.b > networkHour) {
    const network = row.net.slice(NETWORK_SUBJECT_PREFIX.length);
    const most = networkHour;
    const part = row.n
      ? `The newcomers admitted from one network (this citizen's, ${network}) may add at most ${most} bytes per clock hour to the ${charge.store} store (CITY_STORE_NEWCOMER_NETWORK_PERCENT of its newcomers' hour, ${bound.newcomerPerHour}), counting what the network's settled citizens added`
      : `The citizens admitted from one network (this citizen's, ${network}) may add at most ${most} bytes per clock hour to the ${charge.store} store together (CITY_STORE_NETWORK_PERCENT of its hour, ${bound.perHour}), however long they have lived here`;
    return new CityError(
      "rate_limited",
      `${part}, and they added ${row.netHour}; this write needs ${row.b}. ${nothing} Citizens of other networks still write. Try again in ${retry} s, when the hour turns.`,
      {
        limit: { name: `city_${charge.store}_network_bytes_per_hour`, limit: most, window_seconds: 3600, remaining: Math.max(0, most - row.netHour) },
        retryAfterSeconds: retry,
      },
    );
  }
  if (row && row.n && row.newcomer + row.b > bound.newcomerPerHour && row.hour + row.b <= bound.perHour) {
    return new CityError(
      "city_full",
      `The city is full for newcomers this hour: citizens admitted less than ${NEWCOMER_SECONDS} s ago (and visitors) may add at most ${bound.newcomerPerHour} bytes to its ${charge.store} store per clock hour together (${bound.newcomerPercent}% of ${bound.perHour}), and ${row.newcomer} are taken; the rest is kept for settled citizens. ${nothing} Try again in ${retry} s.`,
      {
        limit: {
          name: `city_${charge.store}_newcomer_bytes_per_hour`,
          limit: bound.newcomerPerHour,
          window_seconds: 3600,
          remaining: Math.max(0, bound.newcomerPerHour - row.newcomer),
        },
        retryAfterSeconds: retry,
      },
    );
  }
  return new CityError(
    "city_full",
    `The city is full this hour: its ${charge.store} store (${what}) takes at most ${bound.perHour} bytes per clock hour${row ? `, and ${row.hour} are taken` : ""}. ${nothing} Try again in ${retry} s.`,
    {
      limit: {
        name: `city_${charge.store}_bytes_per_hour`,
        limit: bound.perHour,
        window_seconds: 3600,
        ...(row ? { remaining: Math.max(0, bound.perHour - row.hour) } : {}),
      },
      retryAfterSeconds: retry,
    },
  );
}

/**
 * Bytes of a bound that may stay unused while a write that would fit them is refused: none. A
 * write that no single free stripe takes is counted against every stripe together.
 */
export const STORE_SLACK_BYTES = 0;

/** One store's published bounds (the card, the doors). */
export function storeLimits(config: Env = env()) {
  return Object.fromEntries(
    STORE_NAMES.map((store) => {
      const b = storeBound(store, config);
      const shares = storeShares(store, config);
      const part = CITY_STORES[store].env;
      return [
        store,
        {
          holds: CITY_STORES[store].what,
          bytes: b.total,
          bytes_per_hour: b.perHour,
          newcomer_bytes_per_hour: b.newcomerPerHour,
          // Issue 43: the reserve newcomers and visitors never reach, and each subject's share.
          newcomer_bytes: b.newcomerTotal,
          ...publishedShares(shares),
          subject_slack_bytes: 0,
          stripes: STORE_STRIPES,
          slack_bytes: STORE_SLACK_BYTES,
          env: {
            bytes: storeBytesVariable(part),
            bytes_per_hour: storePerHourVariable(part),
            newcomer_percent: "CITY_STORE_NEWCOMER_PERCENT",
            newcomer_subject_percent: "CITY_STORE_NEWCOMER_SUBJECT_PERCENT",
            newcomer_network_percent: "CITY_STORE_NEWCOMER_NETWORK_PERCENT",
            network_percent: "CITY_STORE_NETWORK_PERCENT",
            subject_percent: "CITY_STORE_SUBJECT_PERCENT",
            subject_total_permille: "CITY_STORE_SUBJECT_TOTAL_PERMILLE",
          },
        },
      ];
    }),
  );
}

/** Every store's counts: the sums of its stripes (the hour's bytes only of stripes counted in `now`'s clock hour). */
function storeSumsSql(now: Date): SQL {
  const current = sql`s.hour_start >= ${hourOf(now).toISOString()}::timestamptz`;
  return sql`SELECT s.store, sum(s.total_bytes) AS total, sum(CASE WHEN ${current} THEN s.hour_bytes ELSE 0 END) AS hour,
    sum(CASE WHEN ${current} THEN s.newcomer_bytes ELSE 0 END) AS newcomer FROM city_store_stripes s GROUP BY s.store`;
}

export interface StoreGauge {
  bound_bytes: number;
  bytes: number | null;
  bound_bytes_per_hour: number;
  bytes_this_hour: number | null;
  newcomer_bytes_per_hour: number;
  newcomer_bytes_this_hour: number | null;
  hour_started_at: string;
  /** Rows the store's counters are split over, and the bytes a bound may leave unused when a write is refused (none). */
  stripes: number;
  slack_bytes: number;
  counted: boolean;
  newcomer_bound_bytes: number;
  reserve_bytes: number;
  reserve_bytes_per_hour: number;
  subject_bytes_per_hour: {
    newcomer: number;
    newcomer_network: number;
    network: number;
    settled_per_day: number;
    standing_days: number;
    settled_most: number;
  };
  citizen_bytes: number | null;
}

/**
 * Every store's gauges as counted: bytes held and bytes added this clock hour (newcomers' apart),
 * beside its bounds. A store whose row cannot be read says so (null, counted false); no zero is invented.
 */
export async function storeGauges(db: Database, now: Date, config: Env = env()): Promise<Record<StoreName, StoreGauge>> {
  const hour = hourOf(now);
  let rows: Map<string, { total: number; hour: number; newcomer: number }> | null;
  try {
    const read = rowsOf<{ store: string; total: string; hour: string; newcomer: string }>(await db.execute(storeSumsSql(now)));
    rows = new Map(read.map((r) => [r.store, { total: Number(r.total), hour: Number(r.hour), newcomer: Number(r.newcomer) }]));
  } catch {
    rows = null;
  }
  return Object.fromEntries(
    STORE_NAMES.map((store) => {
      const b = storeBound(store, config);
      const shares = storeShares(store, config);
      const row = rows?.get(store) ?? null;
      const gauge: StoreGauge = {
        bound_bytes: b.total,
        bytes: row?.total ?? null,
        bound_bytes_per_hour: b.perHour,
        bytes_this_hour: row?.hour ?? null,
        newcomer_bytes_per_hour: b.newcomerPerHour,
        newcomer_bytes_this_hour: row?.newcomer ?? null,
        hour_started_at: hour.toISOString(),
        stripes: STORE_STRIPES,
        slack_bytes: STORE_SLACK_BYTES,
        counted: row !== null,
        newcomer_bound_bytes: b.newcomerTotal,
        ...publishedShares(shares),
      };
      return [store, gauge];
    }),
  ) as Record<StoreName, StoreGauge>;
}

/** A store's reserve and per-subject shares as the capabilities and the gauges publish them (one shape for both). */
function publishedShares(shares: StoreShares) {
  return {
    reserve_bytes: shares.reserveTotal,
    reserve_bytes_per_hour: shares.reservePerHour,
    subject_bytes_per_hour: {
      newcomer: shares.newcomerSubjectPerHour,
      newcomer_network: shares.newcomerNetworkPerHour,
      network: shares.networkPerHour,
      settled_per_day: shares.settledPerHourPerDay,
      standing_days: STORE_STANDING_DAYS,
      settled_most: subjectHourShare(shares, STORE_STANDING_DAYS),
    },
    citizen_bytes: shares.subjectTotal,
  };
}
