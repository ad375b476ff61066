/**
 * Waits, when fewer than `marginMs` are left of the current period (periods are cut from the epoch,
 * as the stores' clock hours and the gate's bid steps are), until the next one has begun (`afterMs`
 * into it): a test that fills a period's bound with the clock running must not see it turn midway.
 */
export async function awayFromTurn(periodMs: number, marginMs: number, afterMs = 200): Promise<void> {
  const ahead = aheadOfTurn(periodMs, marginMs, afterMs);
  if (!ahead) return;
  // Said, so that a slow file in a run's summary is known for a wait, not for its work.
  console.log(`waiting ${(ahead / 1000).toFixed(1)} s for the turn of a ${periodMs / 1000} s period (tests/support/clock.ts)`);
  await new Promise((resolve) => setTimeout(resolve, ahead));
}

/**
 * What awayFromTurn would wait, in ms (0 when at least `marginMs` are left of the current period):
 * a domain test that passes its own `now` to the city sets its clock this far ahead instead of
 * waiting (clockClearOfTurn).
 */
export function aheadOfTurn(periodMs: number, marginMs: number, afterMs = 200): number {
  const left = periodMs - (Date.now() % periodMs);
  return left < marginMs ? left + afterMs : 0;
}

/** A clock that runs with real time, set ahead (aheadOfTurn) so that it starts at least `marginMs` clear of the period's turn. */
export function clockClearOfTurn(periodMs: number, marginMs: number): () => Date {
  const ahead = aheadOfTurn(periodMs, marginMs);
  return () => new Date(Date.now() + ahead);
}

/** awayFromTurn for the clock hour, the period of every store's hourly bound. */
export function awayFromHourTurn(marginMs: number, afterMs = 200): Promise<void> {
  return awayFromTurn(3_600_000, marginMs, afterMs);
}
