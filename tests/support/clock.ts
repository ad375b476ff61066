/**
 * Waits, when fewer than `marginMs` are left of the current period (periods are cut from the epoch,
 * as the stores' clock hours and the gate's bid steps are), until the next one has begun (`afterMs`
 * into it): a test that fills a period's bound with the clock running must not see it turn midway.
 */
export async function awayFromTurn(periodMs: number, marginMs: number, afterMs = 200): Promise<void> {
  const left = periodMs - (Date.now() % periodMs);
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + afterMs));
}

/** awayFromTurn for the clock hour, the period of every store's hourly bound. */
export function awayFromHourTurn(marginMs: number, afterMs = 200): Promise<void> {
  return awayFromTurn(3_600_000, marginMs, afterMs);
}
