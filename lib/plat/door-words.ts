/** The doors page's words for numbers, windows and schemas: plain functions, no data access. */

const whole = new Intl.NumberFormat("en");
const UNITS = ["bytes", "KiB", "MiB", "GiB", "TiB"] as const;

/** A size in bytes as people read it: 268435456 is "256 MiB", 32768 "32 KiB"; a size that is no whole unit stays in bytes ("1,000 bytes"). */
export function formatBytes(bytes: number): string {
  let unit = 0;
  let value = bytes;
  while (unit < UNITS.length - 1 && value >= 1024 && value % 1024 === 0) {
    value /= 1024;
    unit++;
  }
  return `${whole.format(value)} ${UNITS[unit]}`;
}

const WINDOWS: [number, string][] = [
  [86_400, "day"],
  [3_600, "hour"],
  [60, "minute"],
];

/** A rate window in words: 3600 s is "an hour", 86400 s "a day", 600 s "10 minutes", 604800 s "7 days". */
export function formatWindow(seconds: number): string {
  for (const [size, unit] of WINDOWS) {
    if (seconds % size !== 0) continue;
    const n = seconds / size;
    return n === 1 ? `${unit === "hour" ? "an" : "a"} ${unit}` : `${whole.format(n)} ${unit}s`;
  }
  return `${whole.format(seconds)} seconds`;
}

/** A published limit's value: a size when it counts bytes, else a count with its thousands marked. */
export function formatLimit(limit: { name: string; limit: number }): string {
  return /bytes/.test(limit.name) ? formatBytes(limit.limit) : whole.format(limit.limit);
}

/** Where a long name may break: after each underscore (CITY_STORE_NEWCOMER_PERCENT, city_ward_bytes_per_hour). */
export function breakParts(text: string): string[] {
  return text.split(/(?<=_)/);
}

type JsonSchema = Record<string, unknown>;

/** A request field's JSON Schema in a few words: its type, its values when they are few, its bounds. */
export function schemaWords(schema: JsonSchema): string {
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.map((v) => JSON.stringify(v)).join(", ")}`;
  if ("const" in schema) return JSON.stringify(schema.const);
  const variants = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (Array.isArray(variants)) return variants.map(schemaWords).join(" or ");
  const type = schema.type;
  if (type === "array")
    return `array of ${schema.items ? schemaWords(schema.items as JsonSchema) : "values"}${bounds(schema, "minItems", "maxItems", "items")}`;
  if (type === "string")
    return `${schema.pattern === "^[0-9a-f]{64}$" ? "64 lowercase hex" : "string"}${bounds(schema, "minLength", "maxLength", "characters")}`;
  if (type === "integer" || type === "number") return `${type}${bounds(schema, "minimum", "maximum", "")}`;
  if (typeof type === "string") return type;
  return "any JSON value";
}

function bounds(schema: JsonSchema, min: string, max: string, noun: string): string {
  const lo = typeof schema[min] === "number" ? (schema[min] as number) : undefined;
  const hi = typeof schema[max] === "number" && (schema[max] as number) < Number.MAX_SAFE_INTEGER ? (schema[max] as number) : undefined;
  const unit = noun ? ` ${noun}` : "";
  if (lo !== undefined && hi !== undefined) return lo === hi ? `, ${whole.format(lo)}${unit}` : `, ${whole.format(lo)} to ${whole.format(hi)}${unit}`;
  if (hi !== undefined) return `, at most ${whole.format(hi)}${unit}`;
  if (lo !== undefined && lo > 0) return `, at least ${whole.format(lo)}${unit}`;
  return "";
}
