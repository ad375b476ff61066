/**
 * Numbers of the spec's "Limits" table that configuration needs too. A leaf module: the
 * environment (lib/env.ts) and the domain (lib/city/protocols.ts) both import it, so
 * configuration stands on nothing of the domain.
 */
export const LOCKER_BYTES_CITY_WIDE = 2_147_483_648;
