import type { PGlite, QueryOptions, Results, Transaction, parse, protocol } from "@electric-sql/pglite";

/*
 * Named prepared statements on PGlite, as node-postgres and the Neon driver send them (db/sql.ts,
 * executePrepared). PGlite's own `query` always parses, plans and runs an unnamed statement, so a
 * statement sent on every request is planned every time: the gate's reading took 32-42 ms to plan
 * and 2 ms to run in WebAssembly (EXPLAIN ANALYZE, this machine), most of an admission's CPU on the
 * embedded database. Here a statement marked prepared is parsed once per PGlite under its name
 * (the protocol's Parse), and each call binds and executes it: the server then plans it as a
 * prepared statement (custom plans for the first five calls, then its generic plan when the
 * estimate allows, exactly as on PostgreSQL), and its rows are parsed by PGlite's own parsers, so a
 * caller sees the same result either way.
 */

/** The texts executePrepared sends, with their names: only these are prepared, so a session keeps a bounded set. */
const preparedNames = new Map<string, string>();

/** Marks a statement's text as one to prepare on PGlite under `name` (a hash of the text). */
export function markPrepared(text: string, name: string): void {
  preparedNames.set(text, name);
}

/** Per PGlite instance: the statements it has parsed, with the parameter types the server inferred. */
const parsed = new WeakMap<PGlite, Map<string, number[]>>();

type Query = (text: string, params?: unknown[], options?: QueryOptions) => Promise<Results>;

/** PGlite's wire-protocol helpers, from the module openPglite has already loaded. */
export interface Wire {
  protocol: typeof protocol;
  parse: typeof parse;
}

/**
 * The PGlite client drizzle is given: the instance itself for everything but `query` (a marked
 * statement goes prepared) and `transaction` (its transaction's `query` likewise, inside the
 * transaction's own lock).
 */
export function withPreparedStatements(pglite: PGlite, wire: Wire): PGlite {
  return new Proxy(pglite, {
    get(target, property) {
      if (property === "query") return routed(target, wire, target.query.bind(target), false);
      if (property === "transaction")
        return <T>(callback: (tx: Transaction) => Promise<T>) =>
          target.transaction((tx) => callback(Object.assign(Object.create(tx) as Transaction, { query: routed(target, wire, tx.query.bind(tx), true) })));
      const value = Reflect.get(target, property, target) as unknown;
      // PGlite's methods use private fields: they are called on the instance, never on the proxy.
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function routed(pglite: PGlite, wire: Wire, plain: Query, inTransaction: boolean): Query {
  return (text, params, options) => {
    const name = preparedNames.get(text);
    if (!name) return plain(text, params, options);
    const run = () => pglite._runExclusiveQuery(() => executeNamed(pglite, wire, name, text, params ?? [], options));
    if (inTransaction) return run();
    // Outside a transaction it waits for any transaction to end and is written through to a data
    // folder after, as PGlite's own `query` does.
    return pglite._runExclusiveTransaction(async () => {
      const result = await run();
      await pglite.syncToFs();
      return result;
    });
  };
}

async function executeNamed(
  pglite: PGlite,
  { protocol, parse }: Wire,
  name: string,
  text: string,
  params: unknown[],
  options?: QueryOptions,
): Promise<Results> {
  const { serialize } = protocol;
  const send = async (message: Uint8Array) => (await pglite.execProtocol(message, { syncToFs: false })).messages;
  let statements = parsed.get(pglite);
  if (!statements) parsed.set(pglite, (statements = new Map<string, number[]>()));
  const messages = [];
  try {
    let types = statements.get(text);
    if (!types) {
      await send(serialize.parse({ name, text }));
      types = parse.parseDescribeStatementResults(await send(serialize.describe({ type: "S", name })));
      statements.set(text, types);
    }
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null;
      const serializer = options?.serializers?.[types[i]!] ?? pglite.serializers[types[i]!];
      return serializer ? serializer(value) : String(value);
    });
    messages.push(...(await send(serialize.bind({ statement: name, values }))));
    messages.push(...(await send(serialize.describe({ type: "P" }))));
    messages.push(...(await send(serialize.execute({}))));
  } finally {
    messages.push(...(await send(serialize.sync())));
  }
  return parse.parseResults(messages, pglite.parsers, options)[0]!;
}
