import { index, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

/**
 * The keys a citizen's signed requests (CITY-SIG/1, RFC 9421) may be made with: its controller key
 * now (`exp` null) and each key rotated away, kept until `exp`, the last moment a signature made
 * before the rotation could still be valid. Kept by a trigger on citizens.controller_public_key
 * (migration 0031), so every path that binds or rotates a controller key keeps it, with no code of
 * its own; a citizen's rows past their `exp` are removed by the next change of its key.
 */
export const requestKeys = pgTable(
  "request_keys",
  {
    did: text("did").notNull(),
    /** The RFC 7638 JWK thumbprint (SHA-256, base64url) of the key: the signature's keyid. */
    thumbprint: text("thumbprint").notNull(),
    /** The Ed25519 public key, lowercase hex. */
    publicKey: text("public_key").notNull(),
    /** When the key was bound. */
    nbf: timestamp("nbf", { withTimezone: true, mode: "date" }).notNull(),
    /** When it was rotated away: null while it is the controller key. */
    rotatedAt: timestamp("rotated_at", { withTimezone: true, mode: "date" }),
    /** The last moment a signature made with it before its rotation can be valid; null while current. */
    exp: timestamp("exp", { withTimezone: true, mode: "date" }),
    /** The key's signed writes, counted by GCRA: the theoretical arrival time of its next nonce. */
    nonceTat: timestamp("nonce_tat", { withTimezone: true, mode: "date" }),
  },
  (t) => [primaryKey({ columns: [t.did, t.thumbprint] }), index("request_keys_thumbprint").on(t.thumbprint)],
);

/**
 * The nonces of signed writes, single use per key while a signature carrying it can be accepted
 * (until its `expires`, or 31 s after its `created`, whichever is first): recorded by the write's
 * first statement (in its transaction), swept once expired a batch at a time by later signed
 * writes, and counted per key (request_keys.nonce_tat), never in a city-wide store.
 */
export const signatureNonces = pgTable(
  "signature_nonces",
  {
    keyid: text("keyid").notNull(),
    nonce: text("nonce").notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.keyid, t.nonce] }), index("signature_nonces_expires_at").on(t.expiresAt)],
);
