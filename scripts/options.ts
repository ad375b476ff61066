/** A command's `--name value` option taken out of its arguments (undefined when absent), for the scripts' small CLIs. */
export function takeOption(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  if (at < 0) return undefined;
  const value = args[at + 1];
  args.splice(at, 2);
  return value;
}

/** A command's `--name value` option left in its arguments, or `fallback` when absent or given no value (the benchmarks' CLIs). */
export function optionOr(args: readonly string[], name: string, fallback: string): string {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] ? args[at + 1]! : fallback;
}
