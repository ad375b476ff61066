import { describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { openPglite, serverDriverFor } from "@/db/client";
import { rowsOf } from "@/db/sql";
import { LIMITS } from "@/lib/city/protocols";
import { LOCKER_BYTES_CITY_WIDE } from "@/lib/spec-limits";

describe("database driver rule", () => {
  it("reaches a Neon host through Neon's serverless driver", () => {
    expect(serverDriverFor("postgres://u:p@ep-cool-dawn-123456.eu-central-1.aws.neon.tech/city", {})).toBe("neon");
    expect(serverDriverFor("postgresql://u:p@ep-x-pooler.us-east-2.aws.neon.tech/city?sslmode=require", {})).toBe("neon");
    expect(serverDriverFor("postgres://u:p@ep-x.neon.build/city", {})).toBe("neon");
  });

  it("reaches any other PostgreSQL through node-postgres", () => {
    expect(serverDriverFor("postgres://postgres@127.0.0.1:5432/postgres", {})).toBe("pg");
    expect(serverDriverFor("postgres://u:p@db.abcd.supabase.co:5432/postgres", {})).toBe("pg");
    expect(serverDriverFor("postgres://u:p@notneon.tech/city", {})).toBe("pg");
    expect(serverDriverFor("postgres://u:p@neon.tech.example.com/city", {})).toBe("pg");
  });

  it("lets CITY_DB_DRIVER override the rule, and a Neon relay imply Neon's driver", () => {
    expect(serverDriverFor("postgres://u:p@ep-x.neon.tech/city", { CITY_DB_DRIVER: "pg" })).toBe("pg");
    expect(serverDriverFor("postgres://postgres@127.0.0.1/city", { CITY_DB_DRIVER: "neon" })).toBe("neon");
    expect(serverDriverFor("postgres://postgres@127.0.0.1/city", { CITY_NEON_WS_PROXY: "127.0.0.1:1/v1?address={host}:{port}" })).toBe("neon");
  });
});

describe("configuration stands on nothing of the domain", () => {
  it("keeps the spec's city-wide locker bound of 2147483648 bytes in the leaf module the domain reads", () => {
    expect(LOCKER_BYTES_CITY_WIDE).toBe(2147483648);
    expect(LIMITS.locker.bytesCityWide).toBe(2147483648);
  });
});

describe("the embedded PGlite", () => {
  it("is made with WAL segments of 1 MB, not PostgreSQL's 16 (db/client.ts PGLITE_INITDB)", async () => {
    const open = await openPglite("memory://");
    try {
      const rows = rowsOf<{ wal_segment_size: string }>(await open.db.execute(sql`SHOW wal_segment_size`));
      expect(rows).toEqual([{ wal_segment_size: "1MB" }]);
    } finally {
      await open.close();
    }
  });
});
