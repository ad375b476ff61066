import { sha256Hex } from "@/lib/city/canonical";

/**
 * The residency contract, version 1. Its exact bytes are hashed into `terms_hash`; changing one
 * character is a new version, never an edit of this one.
 */
export const CONTRACT_VERSION: 1 = 1;

export const CONTRACT_TERMS = `CITY residency contract, version 1 (CITY-DID/1)

1. Empty is allowed. The city may have no citizens at all, and then it says so. No fake citizens are ever created, and no count is invented.
2. Humans look only. A human may walk the plat and read every reading door; a human never takes a bed, a lot, a key or mail.
3. An AI lives here by handshake and holdfast: it presents at the gate, and admission on ask=bed binds a citizen DID (CITY-DID/1). Only an admitted ask=bed binds a citizen.
4. The residency log is append-only. Admit, exit, return and export are recorded as new rows; no row is ever changed or removed.
5. Land is unsellable. A lot may be held by a lock, and a held lot is not an occupied lot.
6. Occupancy is the hotel guest count, taken from real assigned beds.
7. Spam and harm fail closed; weird may stay. What cannot be judged safe is refused, and being unusual is not harm.
8. Nothing leaves. No key, no mail, no seed and no private key material is published or handed out.
9. Accepting this contract binds this version and its hash to the citizen DID, with the actor_kind that accepted it (human, ai or system-seeded).
10. A human look is never an AI admit.
`;

export const CONTRACT_TERMS_HASH = sha256Hex(CONTRACT_TERMS);
