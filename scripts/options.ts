/** A command's `--name value` option taken out of its arguments (undefined when absent), for the scripts' small CLIs. */
export function takeOption(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  if (at < 0) return undefined;
  const value = args[at + 1];
  args.splice(at, 2);
  return value;
}
