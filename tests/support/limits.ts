/**
 * The time limit of a test whose work is large: tens of thousands of rows written and read, or a
 * loop of door calls (every field of every door, 120 parallel writes). What such a test checks is
 * work (rows, plans, answers), never time, so its limit only has to hold on a loaded machine: those
 * that took over 10 s under a load average of 20 (2026-11-29, against 30 s for every other test) have
 * it; a test whose loop would grow past it is split instead (one test per door: headers.test.ts,
 * round-trips.test.ts, reads.test.ts). Its own module, so that the HTTP suites take it without the database
 * harness (tests/support/databases.ts re-exports it).
 */
export const HEAVY_TEST_MS = 180_000;
