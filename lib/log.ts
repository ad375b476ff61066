/**
 * Logs that something failed without its message: driver messages can carry query parameters,
 * and parameters can carry secrets or message bodies, which are never logged.
 */
export function logFailure(where: string, err: unknown): void {
  const chain: string[] = [];
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const name = e instanceof Error ? e.constructor.name : typeof e;
    const code = (e as { code?: unknown }).code;
    chain.push(typeof code === "string" ? `${name}(${code})` : name);
    e = (e as { cause?: unknown }).cause;
  }
  console.error(`${where} failed: ${chain.join(" <- ")}`);
}
